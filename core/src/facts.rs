//! Typed `facts` of every act of every lab: what the act observed, stored in `evidence/NN.json`
//! under `facts` and read back by the graders.
//!
//! Conventions: timestamps are RFC 3339 UTC strings with milliseconds
//! (`2026-11-29T14:00:00.123Z`, see [`now_rfc3339`]); durations are integers in milliseconds named
//! `*_ms`; every request the act sends is a [`RequestRecord`] (raw answer + classification + follow-up
//! GET). Objects copied from the API server (`serde_json::Value`) are verbatim.
//!
//! Acts 1-2 are the same in every lab ([`Act1Facts`], [`Act2Facts`]) and act 3 in labs A and B
//! ([`Act3Facts`]); acts 4-7 are in [`b`] (freeze) and [`a`] (scale-down), lab C's 3-7 in [`c`].
//! Types may gain fields; existing ones keep their names and meaning (unknown fields are tolerated
//! when reading, so graders stay readable).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::evidence::RequestRecord;

/// The current time as RFC 3339 UTC with milliseconds, e.g. `2026-11-29T14:00:00.123Z`.
pub fn now_rfc3339() -> String {
    format_rfc3339(chrono::Utc::now())
}

/// Formats a UTC time the way evidence stores it (RFC 3339, milliseconds, `Z`).
pub fn format_rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 timestamp from evidence; `None` if it is not one.
pub fn parse_rfc3339(s: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

/// Milliseconds from `from` to `to`, two evidence timestamps (RFC 3339; negative when `to` is
/// earlier); `None` when either is absent or not a timestamp.
pub fn ms_between(from: Option<&str>, to: Option<&str>) -> Option<i64> {
    Some((parse_rfc3339(to?)? - parse_rfc3339(from?)?).num_milliseconds())
}

/// A namespaced or cluster-scoped object identified by name and UID.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRef {
    /// Namespace (absent for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

/// One GET of a pod by name: whether it exists and, if so, its UID and phase (act 3's pod survives
/// as [`crate::rules::common::same_uid_running`] says).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodObservation {
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// Whether the GET found it.
    pub exists: bool,
    /// `metadata.uid` when it exists.
    pub uid: Option<String>,
    /// `status.phase` when it exists (`Running`, `Pending`…).
    pub phase: Option<String>,
    /// Sum of `status.containerStatuses[].restartCount`, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_count: Option<u32>,
    /// When the GET was answered, RFC 3339 UTC (ms).
    pub at: String,
}

/// The node this lab runs on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// `metadata.name` of the (single) node.
    pub name: String,
    /// `metadata.uid` of the node (`vm.node_uid` in `inspect`).
    pub uid: String,
}

/// Act 1 (every lab): the scope checked against the live cluster and saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Act1Facts {
    /// The live node (name and UID).
    pub node: NodeFacts,
    /// Live namespace name → UID for the target and control namespaces.
    pub namespaces: BTreeMap<String, String>,
    /// Name of the namespace inside the policy's selector (`kca-webhook-target`).
    pub target: String,
    /// Name of the namespace outside it (`kca-webhook-control`).
    pub control: String,
    /// The Kyverno admission controller Deployment (`kyverno/kyverno-admission-controller`).
    pub controller_deployment: ObjectRef,
    /// Where the lab-environment mark was found (e.g. `node label kca-webhook-lab=true`);
    /// `None` when missing (faults are then refused).
    pub lab_mark: Option<String>,
    /// When the live values were read, RFC 3339 UTC (ms).
    pub checked_at: String,
}

/// A webhook's `service` client configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceRef {
    /// Service namespace (e.g. `kyverno`).
    pub namespace: String,
    /// Service name (e.g. `kyverno-svc`).
    pub name: String,
    /// Request path (Kyverno: `/vpol/<policy>` for a fine-grained policy webhook).
    pub path: Option<String>,
    /// Service port (defaulted to 443 by the API server).
    pub port: i32,
}

/// One webhook of a ValidatingWebhookConfiguration as the API server stores it (observed, never
/// inferred from the policy). Source of the expected shape: kyverno v1.19.1
/// `pkg/controllers/webhook/validating.go` (fine-grained webhook
/// `vpol.validate.kyverno.svc-{fail,ignore}-finegrained-<policy>`, path `/vpol/<policy>`,
/// `sideEffects: NoneOnDryRun`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookFacts {
    /// Name of the ValidatingWebhookConfiguration (`kyverno-resource-validating-webhook-cfg`).
    pub configuration: String,
    /// Its `metadata.uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration_uid: Option<String>,
    /// The webhook's `name`.
    pub name: String,
    /// `clientConfig.service`, when the webhook uses a service reference.
    pub service: Option<ServiceRef>,
    /// `clientConfig.url`, when the webhook uses a URL instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `failurePolicy` (`Fail` or `Ignore`).
    pub failure_policy: String,
    /// `timeoutSeconds` (seconds; the API server defaults it to 10).
    pub timeout_seconds: u32,
    /// `namespaceSelector`, verbatim.
    pub namespace_selector: serde_json::Value,
    /// `objectSelector`, verbatim.
    pub object_selector: serde_json::Value,
    /// `matchConditions`, verbatim (array, or null when absent).
    pub match_conditions: serde_json::Value,
    /// `rules`, verbatim (array).
    pub rules: serde_json::Value,
    /// `sideEffects` (`None` or `NoneOnDryRun`).
    pub side_effects: String,
    /// `matchPolicy` (`Equivalent` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<String>,
    /// When the configuration was read, RFC 3339 UTC (ms).
    pub observed_at: String,
}

/// Act 2 (every lab): the policy as stored and its real registration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Act2Facts {
    /// The stored ValidatingPolicy object, verbatim (has `metadata.uid`).
    pub policy: serde_json::Value,
    /// The webhook that serves this policy, as registered.
    pub webhook: WebhookFacts,
}

/// Act 3 (labs A and B): baseline in a healthy state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Act3Facts {
    /// A pod labelled `environment` in the target namespace: must be `stored` with a UID.
    pub good: RequestRecord,
    /// A pod without the label in the target namespace: must be `explicit-deny`, not stored.
    pub bad: RequestRecord,
    /// The good pod observed `Running`: the pod whose survival later acts check (same UID).
    pub existing: PodObservation,
}

/// Act 8 (every lab): one field of `report.json` compared with what the evidence shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportCheck {
    /// Field of `report.json`, e.g. `fail` or `fail_evidence_sha256`.
    pub field: String,
    /// The value in the report.
    pub report: serde_json::Value,
    /// The value the evidence supports.
    pub evidence: serde_json::Value,
    /// Whether they agree.
    pub agrees: bool,
}

/// Act 8 (every lab): the report checked against the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Act8Facts {
    /// One entry per report field.
    pub checks: Vec<ReportCheck>,
    /// Canonical digests of `evidence/NN.json` at the time of the check (act number as a
    /// two-digit string, e.g. `"05"`, → digest).
    pub evidence_digests: BTreeMap<String, String>,
}

/// Act 6 of the freezing labs (B and C): the policy switched to failurePolicy Ignore (same UID),
/// a healthy deny, then the freeze `run` ([`b::FreezeRun`] or [`c::ReplicaFreezeRun`]), whose
/// fields stand beside the switch's in one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySwitch<R> {
    /// The policy's UID before the update (act 2's).
    pub policy_uid_before: String,
    /// The stored policy after the update, verbatim (same `metadata.uid`).
    pub policy: serde_json::Value,
    /// The registration after the switch (failurePolicy `Ignore`).
    pub webhook: WebhookFacts,
    /// A violating request in a healthy state under Ignore (every replica healthy): must be
    /// `explicit-deny`.
    pub healthy_bad: RequestRecord,
    /// The freeze and its requests.
    #[serde(flatten)]
    pub run: R,
}

/// Lab B (freeze the controller process; failurePolicy Fail vs Ignore), acts 4-7.
pub mod b {
    use super::*;

    /// Identity of the one Kyverno admission-controller process, as found through CRI and /proc.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ProcessIdentity {
        /// Host PID of the controller's main process (CRI reports host PIDs).
        pub pid: u32,
        /// Field 22 of `/proc/<pid>/stat` (`starttime`, clock ticks since boot): with the PID, it
        /// identifies the process (a reused PID has another start time).
        pub pid_start_time_ticks: u64,
        /// CRI container ID (full, without the `containerd://` prefix).
        pub container_id: String,
        /// UID of the pod the container belongs to.
        pub pod_uid: String,
    }

    /// Act 4: investigation only (nothing is frozen).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act4Facts {
        /// Live node UID (compared with `freeze-plan.json` `node_uid`).
        pub node_uid: String,
        /// Live UID of `kyverno-admission-controller` (compared with `deployment_uid`).
        pub deployment_uid: String,
        /// The controller pod's name.
        pub pod_name: String,
        /// The controller pod's namespace (`kyverno`).
        pub pod_namespace: String,
        /// The container's name in the pod (`kyverno`).
        pub container_name: String,
        /// The process to be frozen in act 5.
        pub identity: ProcessIdentity,
        /// The container's restart count now (act 5 checks the freeze does not restart it).
        pub restart_count: u32,
        /// Process state letter from `/proc/<pid>/stat` (e.g. `S`); must not be `T`.
        pub process_state: String,
        /// When the investigation finished, RFC 3339 UTC (ms).
        pub investigated_at: String,
    }

    /// Who sent SIGCONT.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Resumer {
        /// The independent watchdog, at its deadline.
        Watchdog,
        /// The act's own process.
        Runner,
    }

    /// The freeze itself: when, which process, who resumed it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct FreezeWindow {
        /// The identity re-read right before SIGSTOP (must equal act 4's).
        pub identity: ProcessIdentity,
        /// PID of the watchdog process.
        pub watchdog_pid: Option<u32>,
        /// When the watchdog answered ready, RFC 3339 UTC (ms); before `frozen_at`.
        pub watchdog_armed_at: String,
        /// The watchdog's deadline after the freeze, seconds (`resume_after_sec`, 20 in act 5).
        pub resume_after_sec: u32,
        /// When SIGSTOP was sent through the pidfd, RFC 3339 UTC (ms).
        pub frozen_at: String,
        /// Process state seen during the freeze (`T` when stopped).
        pub state_during: Option<String>,
        /// When SIGCONT was sent, RFC 3339 UTC (ms).
        pub resumed_at: String,
        /// Who sent SIGCONT.
        pub resumed_by: Resumer,
        /// Process state after resume (must not be `T`).
        pub state_after: String,
    }

    /// Everything observed around one freeze (act 5 entirely; act 6 in part).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct FreezeRun {
        /// The freeze window.
        pub freeze: FreezeWindow,
        /// Whether the policy's webhook was still registered during the freeze (observed).
        pub registration_present_during_freeze: bool,
        /// The webhook entry read during the freeze, verbatim (null if absent).
        pub registration_snapshot: serde_json::Value,
        /// When that read was answered, RFC 3339 UTC (ms).
        pub registration_checked_at: String,
        /// `timeoutSeconds` of the registered webhook at the time (seconds).
        pub timeout_seconds: u32,
        /// Labelled pod in the target namespace, sent during the freeze.
        pub target_good: RequestRecord,
        /// Unlabelled pod in the target namespace, sent during the freeze.
        pub target_bad: RequestRecord,
        /// Unlabelled pod in the control namespace (outside the selector), sent during the freeze.
        pub control: RequestRecord,
        /// Violating requests sent after resume, in order, until the first explicit deny
        /// (intermediate outcomes kept).
        pub after_resume: Vec<RequestRecord>,
        /// The first `explicit-deny` after resume (also the last entry of `after_resume`);
        /// `None` if the bounded wait ran out.
        pub first_explicit_deny: Option<RequestRecord>,
        /// Act 3's existing pod, read after resume.
        pub existing: PodObservation,
        /// Controller container restart count before the freeze.
        pub restart_count_before: u32,
        /// Controller container restart count after resume.
        pub restart_count_after: u32,
        /// `first_explicit_deny.answered_at - freeze.resumed_at`, milliseconds (measured, never
        /// assumed); `None` when no deny came within the bound.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub first_deny_after_resume_ms: Option<u64>,
        /// The controller container found through CRI after the first deny (a new container ID
        /// or a higher restart count means Kyverno restarted after the freeze).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub identity_after: Option<ProcessIdentity>,
    }

    /// Act 5: freeze with failurePolicy Fail.
    pub type Act5Facts = FreezeRun;

    /// Act 6: the same policy switched to failurePolicy Ignore, then a short freeze (the target
    /// requests are expected `stored` after the timeout).
    pub type Act6Facts = super::PolicySwitch<FreezeRun>;

    /// Act 7: recovery confirmed by a deny, not by the resume signal.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act7Facts {
        /// The policy's UID now.
        pub policy_uid: String,
        /// The registration now.
        pub webhook: WebhookFacts,
        /// A new-named violating request: must be `explicit-deny`.
        pub healthy_bad: RequestRecord,
        /// Act 3's pod: same UID and `Running`.
        pub existing: PodObservation,
    }
}

/// Lab A (graceful scale-down of the admission controller), acts 4-7.
pub mod a {
    use super::*;

    /// A Deployment and its replica counts.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct DeploymentFacts {
        /// Namespace (`kyverno`).
        pub namespace: String,
        /// Name (`kyverno-admission-controller`).
        pub name: String,
        /// `metadata.uid`.
        pub uid: String,
        /// `spec.replicas`.
        pub replicas: u32,
        /// `status.readyReplicas` (0 when absent).
        pub ready_replicas: u32,
    }

    /// The leader-election Lease (`kyverno/kyverno`; kyverno v1.19.1 `cmd/kyverno/main.go`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct LeaseFacts {
        /// Lease namespace.
        pub namespace: String,
        /// Lease name.
        pub name: String,
        /// `spec.holderIdentity` (a pod name).
        pub holder: Option<String>,
        /// `spec.acquireTime`, verbatim.
        pub acquire_time: Option<String>,
        /// `spec.renewTime`, verbatim.
        pub renew_time: Option<String>,
        /// `spec.leaseDurationSeconds` (seconds).
        pub lease_duration_seconds: Option<u32>,
        /// `spec.leaseTransitions`.
        pub lease_transitions: Option<u32>,
        /// When read, RFC 3339 UTC (ms).
        pub at: String,
    }

    /// Act 4: investigation only (nothing changed).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act4Facts {
        /// Live node UID.
        pub node_uid: String,
        /// The admission controller Deployment.
        pub deployment: DeploymentFacts,
        /// Its pods (name, UID, phase).
        pub pods: Vec<PodObservation>,
        /// The leader Lease.
        pub lease: LeaseFacts,
        /// When the investigation finished, RFC 3339 UTC (ms).
        pub investigated_at: String,
    }

    /// The independent recovery watcher.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct WatcherFacts {
        /// PID of the watcher process.
        pub pid: Option<u32>,
        /// When it answered ready (before the scale), RFC 3339 UTC (ms).
        pub armed_at: String,
        /// Deadline after the scale, seconds (55).
        pub restore_after_sec: u32,
        /// Replicas it restores (1).
        pub original_replicas: u32,
        /// When it restores unless the replicas are already back, RFC 3339 UTC (ms):
        /// `armed_at + restore_after_sec`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub deadline_at: Option<String>,
        /// The fault directory (`<workdir>/faults/scale-…`: plan, ledger, watcher record and log).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub fault_dir: Option<String>,
    }

    /// Whether the policy object still exists.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct PolicyPresence {
        /// The GET found it.
        pub exists: bool,
        /// Its `metadata.uid`.
        pub uid: Option<String>,
        /// When read, RFC 3339 UTC (ms).
        pub at: String,
    }

    /// Act 5: scale to 0 and what remains.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act5Facts {
        /// The recovery watcher, armed before the scale.
        pub watcher: WatcherFacts,
        /// When the scale to 0 was accepted, RFC 3339 UTC (ms).
        pub scaled_at: String,
        /// When no controller pod was left; `None` if that wait ran out.
        pub pods_gone_at: Option<String>,
        /// The policy after the scale-down.
        pub policy: PolicyPresence,
        /// `GET validatingwebhookconfigurations` (the whole List object), verbatim.
        pub webhook_configurations: serde_json::Value,
        /// Whether act 2's webhook (by name) is in `webhook_configurations`.
        pub policy_webhook_present: bool,
        /// When the list was read, RFC 3339 UTC (ms).
        pub registrations_checked_at: String,
        /// Unlabelled pod in the target namespace, after the pods are gone.
        pub target_bad: RequestRecord,
        /// Unlabelled pod in the control namespace.
        pub control: RequestRecord,
        /// Act 3's pod.
        pub existing: PodObservation,
    }

    /// Whether a timeline step was seen within its bound.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum StepStatus {
        /// Seen; `at` is when.
        Confirmed,
        /// The wait ran out (a tool's readiness bound, not a policy verdict); `last_seen` says
        /// what was seen last.
        NotConfirmed,
    }

    /// One step of the recovery timeline.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct TimelineStep {
        /// Confirmed or not.
        pub status: StepStatus,
        /// When it was seen, RFC 3339 UTC (ms); `None` when not confirmed.
        pub at: Option<String>,
        /// The last state seen while waiting (always set when not confirmed).
        pub last_seen: Option<String>,
        /// Milliseconds from the instant act 6's recovery wait began (the same instant for every
        /// step) to when the step was recorded: for a confirmed step, `at − waited_ms` is that
        /// instant (within `grade::bounds::STEP_START_SPREAD_MS`), except for `replicas_restored`
        /// found already restored, whose `at` is the restorer's own record.
        pub waited_ms: u64,
    }

    impl TimelineStep {
        /// When the step was seen (`at`, parsed); `None` when not confirmed or unparsable.
        pub fn seen_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
            match self.status {
                StepStatus::Confirmed => self.at.as_deref().and_then(super::parse_rfc3339),
                StepStatus::NotConfirmed => None,
            }
        }

        /// The last check that did not yet see the step (so it happened in `(this, at]`): the
        /// RFC 3339 time that `last_seen` begins with (act 6 writes `"<time> <state>"`). `None`
        /// when the step was already there at the first check or `last_seen` has no time first.
        pub fn last_check_before(&self) -> Option<chrono::DateTime<chrono::Utc>> {
            let first = self.last_seen.as_deref()?.split_whitespace().next()?;
            super::parse_rfc3339(first)
        }
    }

    /// Who restored the replicas.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Restorer {
        /// The act's own process.
        Runner,
        /// The independent recovery watcher, at its deadline.
        Watcher,
    }

    /// Act 6: recovery timeline, each step with its own timestamp.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act6Facts {
        /// `spec.replicas` back to the original.
        pub replicas_restored: TimelineStep,
        /// Who restored them.
        pub restored_by: Option<Restorer>,
        /// A new controller pod exists.
        pub pod_created: TimelineStep,
        /// The new pod (name, UID, phase at the last read).
        pub new_pod: Option<PodObservation>,
        /// The new pod is `Running`.
        pub pod_running: TimelineStep,
        /// The Lease holder before recovery (the old pod, if any).
        pub previous_lease_holder: Option<String>,
        /// The Lease names the new pod.
        pub lease_acquired: TimelineStep,
        /// The Lease holder at `lease_acquired`.
        pub lease_holder: Option<String>,
        /// The policy's webhook is in the configuration again.
        pub webhook_registered: TimelineStep,
        /// The registration seen then.
        pub webhook: Option<WebhookFacts>,
        /// A server dry-run violating request is explicitly denied.
        pub first_explicit_deny: TimelineStep,
        /// The dry-run probes sent until then, in order (the last is the deny when confirmed).
        pub deny_probes: Vec<RequestRecord>,
        /// `lease_acquired.at - pod_running.at`, milliseconds (measured, never assumed).
        pub leader_takeover_ms: Option<u64>,
        /// `lease_acquired.at - replicas_restored.at`, milliseconds (measured; about 32 s in a
        /// trial, because the new pod waits for the old Lease to expire).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub lease_after_restore_ms: Option<u64>,
        /// Act 5's violating pod (admitted while no webhook was registered), read after the
        /// recovery: admission does not remove existing objects.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub admitted_during_scale_down: Option<PodObservation>,
        /// Act 3's pod, read after the recovery.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub existing: Option<PodObservation>,
    }

    /// The object a successful server dry-run returned (compared with the request).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct DryRunEcho {
        /// `kind` of the returned object (`Pod`).
        pub kind: String,
        /// `metadata.name`.
        pub name: String,
        /// `metadata.namespace`.
        pub namespace: String,
        /// `metadata.labels`.
        pub labels: BTreeMap<String, String>,
    }

    /// Act 7: server dry-run (`dryRun=All`) with unique names.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act7Facts {
        /// Labelled pod, dry-run: `dry-run-admitted`, GET finds nothing.
        pub good: RequestRecord,
        /// What the good request's response held.
        pub good_response: DryRunEcho,
        /// Unlabelled pod, dry-run: `explicit-deny`.
        pub bad: RequestRecord,
        /// The webhook's `sideEffects` (must be `None` or `NoneOnDryRun` for dry-run to reach it).
        pub side_effects: String,
        /// The webhook's name.
        pub webhook_name: String,
    }
}

/// Lab C (three admission-controller replicas; freeze the leader, then a follower), acts 3-7.
pub mod c {
    use super::a::{DeploymentFacts, LeaseFacts};
    use super::b::ProcessIdentity;
    use super::*;

    /// One admission-controller replica as the API server lists it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReplicaFacts {
        /// The pod (name, UID, phase, restart count of its `kyverno` container, when read).
        pub pod: PodObservation,
        /// Its `Ready` condition is `True`.
        pub ready: bool,
        /// `status.podIP` (the address the API server dials: `--enable-aggregator-routing`).
        pub pod_ip: Option<String>,
    }

    /// One endpoint of the webhook's Service (`kyverno/kyverno-svc`), from its EndpointSlices.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct EndpointFacts {
        /// The endpoint's first address.
        pub address: String,
        /// `targetRef.name`: the pod behind it.
        pub pod: Option<String>,
        /// `conditions.ready` (absent counts as ready, as in the EndpointSlice API).
        pub ready: bool,
    }

    /// The scale to three replicas, done by the scale healer on the runner's request
    /// (`lab/src/faults/scale.rs`), which puts back the original count at its deadline.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ScaleUpFacts {
        /// The attempt's directory name under `faults/`.
        pub fault_id: String,
        /// `spec.replicas` the healer read before scaling (the original count).
        pub replicas_before: u32,
        /// `spec.replicas` the healer wrote (3).
        pub replicas: u32,
        /// When the healer recorded the scale, RFC 3339 UTC (ms).
        pub scaled_at: String,
        /// When the healer puts the original count back unless act 7 or `heal` does first.
        pub restore_deadline_at: String,
    }

    /// The bounded wait after the scale: when each condition was first seen to hold.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReadyWait {
        /// Three replicas with `Ready=True`.
        pub ready_pods_at: String,
        /// Three ready endpoints of `kyverno-svc`, one per ready replica.
        pub ready_endpoints_at: String,
        /// The policy's webhook registration read.
        pub registration_at: String,
        /// How long the whole wait took (ms).
        pub waited_ms: u64,
    }

    /// Kyverno's own counter of admission requests for pods on one replica
    /// (`kyverno_admission_requests_total{resource_kind="Pod"}`, summed over its other labels),
    /// read through the API server's pod proxy before and after the act's requests.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReplicaRequests {
        /// The replica's pod name.
        pub pod: String,
        /// The counter before the requests (`None`: not readable; the reason is in `raw`).
        pub before: Option<u64>,
        /// The counter after the requests.
        pub after: Option<u64>,
    }

    /// Act 3: three replicas ready, the Lease, and a healthy baseline sent in parallel waves.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act3Facts {
        /// The scale to three.
        pub scale: ScaleUpFacts,
        /// The Deployment after the wait.
        pub deployment: DeploymentFacts,
        /// Its replicas after the wait.
        pub replicas: Vec<ReplicaFacts>,
        /// `kyverno-svc`'s endpoints after the wait.
        pub endpoints: Vec<EndpointFacts>,
        /// The policy's registration after the wait.
        pub webhook: WebhookFacts,
        /// The leader Lease `kyverno/kyverno` after the wait.
        pub lease: LeaseFacts,
        /// The wait.
        pub wait: ReadyWait,
        /// How many parallel waves of violating pods were sent.
        pub waves: u32,
        /// How many violating pods each wave sent at once.
        pub wave_size: u32,
        /// The violating pods of the waves, wave after wave (each must be an explicit deny).
        pub bad: Vec<RequestRecord>,
        /// A labelled pod in the target namespace (stored: the existing pod of later acts).
        pub good: RequestRecord,
        /// An unlabelled pod in the control namespace (outside the selector: stored).
        pub control: RequestRecord,
        /// The good pod once `Running`.
        pub existing: PodObservation,
        /// Which replica served how many pod admission requests during the baseline.
        pub replica_requests: Vec<ReplicaRequests>,
    }

    /// One replica's process, found through CRI and `/proc` (as lab B's act 4).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReplicaProcess {
        /// The pod's name.
        pub pod_name: String,
        /// The process identity (PID, start time, container, pod UID).
        pub identity: ProcessIdentity,
        /// The `kyverno` container's restart count (pod status).
        pub restart_count: u32,
        /// Process state letter from `/proc/<pid>/stat` (must not be `T`).
        pub process_state: String,
    }

    /// Act 4: the leader (the Lease's holder) and the followers; nothing is frozen.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act4Facts {
        /// Live node UID (compared with `freeze-plan.json` `node_uid`).
        pub node_uid: String,
        /// Live UID of `kyverno-admission-controller` (compared with `deployment_uid`).
        pub deployment_uid: String,
        /// The Lease read before the processes.
        pub lease: LeaseFacts,
        /// The Lease's holder.
        pub leader: ReplicaProcess,
        /// The other replicas.
        pub followers: Vec<ReplicaProcess>,
        /// The Lease read again after the processes (the holder must not have changed).
        pub lease_after: LeaseFacts,
        /// When the investigation finished, RFC 3339 UTC (ms).
        pub investigated_at: String,
    }

    /// One read of the Lease `kyverno` during a freeze (polled each second).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct LeaseSample {
        /// When the read was answered, RFC 3339 UTC (ms).
        pub at: String,
        /// `spec.holderIdentity` (a pod name); `None` when absent or unreadable.
        pub holder: Option<String>,
        /// `spec.renewTime`, verbatim.
        pub renew_time: Option<String>,
        /// `spec.leaseTransitions`.
        pub lease_transitions: Option<u32>,
        /// The read's error, when it failed (the other fields are then `None`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
    }

    /// One read of `kyverno-svc`'s endpoints during a freeze (polled each second).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct EndpointSample {
        /// When the read was answered, RFC 3339 UTC (ms).
        pub at: String,
        /// The endpoints, sorted by pod name.
        pub endpoints: Vec<EndpointFacts>,
        /// The read's error, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
    }

    /// The frozen replica after the resume, once it settled (restarted and Ready again, or seen
    /// running on), bounded.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct TargetAfter {
        /// The frozen pod's name.
        pub pod: String,
        /// Its UID before the freeze.
        pub pod_uid_before: String,
        /// The UID of the pod with that name after the resume (`None`: gone).
        pub pod_uid_after: Option<String>,
        /// The `kyverno` container's restart count before the freeze (pod status).
        pub restart_count_before: u32,
        /// The restart count after the resume, when the wait ended.
        pub restart_count_after: u32,
        /// Whether the pod was `Ready` when the wait ended.
        pub ready_after: bool,
        /// The process found through CRI after the wait (a new container ID or PID means the
        /// container restarted); `None` when CRI did not answer.
        pub identity_after: Option<super::b::ProcessIdentity>,
        /// Whether the Lease `kyverno` named this pod when the wait ended.
        pub holds_lease_after: bool,
        /// When the wait ended, RFC 3339 UTC (ms).
        pub settled_at: String,
        /// How long the wait took after the first explicit deny (ms).
        pub waited_ms: u64,
    }

    /// One replica's freeze (act 5: the leader under Fail; act 6: a follower under Ignore) and
    /// everything observed around it.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ReplicaFreezeRun {
        /// `leader` or `follower`: the frozen replica's role when the act started.
        pub target_role: String,
        /// The frozen replica's pod name.
        pub target_pod: String,
        /// The Lease read right before the freeze.
        pub lease_before: LeaseFacts,
        /// The freeze window (the identity re-read right before SIGSTOP, the healer, SIGCONT).
        pub freeze: super::b::FreezeWindow,
        /// Whether the policy's webhook was registered during the freeze (read during it).
        pub registration_present_during_freeze: bool,
        /// The webhook entry read during the freeze, verbatim (null if absent).
        pub registration_snapshot: serde_json::Value,
        /// When that read was answered, RFC 3339 UTC (ms).
        pub registration_checked_at: String,
        /// `timeoutSeconds` of the registered webhook at the time (seconds).
        pub timeout_seconds: u32,
        /// How many parallel waves of violating pods were sent during the freeze.
        pub waves: u32,
        /// How many violating pods each wave sent at once.
        pub wave_size: u32,
        /// The violating pods of the waves in the target namespace, wave after wave.
        pub bad: Vec<RequestRecord>,
        /// Unlabelled pods in the control namespace, one per wave (outside the selector).
        pub control: Vec<RequestRecord>,
        /// The Lease, read each second from the freeze until the resume.
        pub lease_samples: Vec<LeaseSample>,
        /// `kyverno-svc`'s endpoints, read each second from the freeze until the resume.
        pub endpoint_samples: Vec<EndpointSample>,
        /// Each replica's pod admission counter before and after the requests (the frozen one
        /// cannot answer during the freeze: its row is read after the resume).
        pub replica_requests: Vec<ReplicaRequests>,
        /// Violating requests sent after the resume until the first explicit deny.
        pub after_resume: Vec<RequestRecord>,
        /// The first explicit deny after the resume (the last of `after_resume`).
        pub first_explicit_deny: Option<RequestRecord>,
        /// `first_explicit_deny.answered_at - freeze.resumed_at` (ms).
        pub first_deny_after_resume_ms: Option<u64>,
        /// The frozen replica after the resume.
        pub target_after: TargetAfter,
        /// The Lease read after the frozen replica settled.
        pub lease_after: LeaseFacts,
        /// Act 3's existing pod, read after the resume.
        pub existing: PodObservation,
    }

    /// Act 5: the leader frozen for 20 s under failurePolicy Fail.
    pub type Act5Facts = ReplicaFreezeRun;

    /// Act 6: the policy switched to Ignore (same UID), a healthy deny, a follower frozen 10 s.
    pub type Act6Facts = super::PolicySwitch<ReplicaFreezeRun>;

    /// The scale back to the original count (act 7): the scale attempt of act 3 closed by the
    /// heal (its healer stood down, the Deployment read and written back).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct ScaleBackFacts {
        /// Act 3's scale attempt.
        pub fault_id: String,
        /// What the heal did (`restored`, `already-restored`, …: `heal.json`'s `action`).
        pub action: String,
        /// `spec.replicas` before the scale back.
        pub replicas_before: u32,
        /// `spec.replicas` written back (the original count).
        pub replicas: u32,
        /// When the heal finished, RFC 3339 UTC (ms).
        pub at: String,
    }

    /// Act 7: back to the original replica count, recovery confirmed by an explicit deny.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Act7Facts {
        /// The scale back.
        pub scale_back: ScaleBackFacts,
        /// The Deployment after the wait.
        pub deployment: super::a::DeploymentFacts,
        /// The live (not terminating) replicas after the wait.
        pub replicas: Vec<ReplicaFacts>,
        /// The Lease after the wait.
        pub lease: LeaseFacts,
        /// The policy's UID now.
        pub policy_uid: String,
        /// The registration now.
        pub webhook: WebhookFacts,
        /// Violating requests until the first explicit deny (every outcome kept).
        pub deny_probes: Vec<RequestRecord>,
        /// The first explicit deny (the last of `deny_probes`).
        pub healthy_bad: RequestRecord,
        /// Act 3's pod: same UID and `Running`.
        pub existing: PodObservation,
        /// How long the wait for the original count and the deny took (ms).
        pub waited_ms: u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_with_millis() {
        let s = now_rfc3339();
        assert!(
            s.ends_with('Z') && s.len() == "2026-11-29T14:00:00.123Z".len(),
            "{s}"
        );
        assert_eq!(format_rfc3339(parse_rfc3339(&s).unwrap()), s);
        assert!(parse_rfc3339("yesterday").is_none());
    }
}
