//! The scale-down fault of lab A and its healer.
//!
//! The fault: the admission controller Deployment (`kyverno/kyverno-admission-controller`) is
//! scaled to 0 replicas through the scale subresource. On Kyverno v1.19.1 a controller that stops
//! while its Deployment has `spec.replicas == 0` deletes every webhook configuration labelled
//! `webhook.kyverno.io/managed-by` (`pkg/webhooks/server.go` `cleanup`, `pkg/utils/runtime`
//! `IsGoingDown`), so the lab observes the registration vanish.
//!
//! Healing, in three layers (`docs/faults.md`):
//!
//! 1. **The healer**, an independent detached process (`kca-webhook-lab healer-scale
//!    --attempt-dir DIR`, its own session and process group, stdin and stdout pipes to the runner,
//!    log in `DIR/healer.log`). It is armed *before* the scale: it reads the kubeconfig, checks
//!    the live Deployment against the plan (same UID, `spec.replicas` equal to the planned original
//!    replicas), takes the target lock, answers ready (one JSON line on stdout) and keeps its
//!    deadline `armed_at + restore_after_sec` on the monotonic clock.
//!    **The healer owns the whole fault**: the scale to 0 is its own, done when the runner asks
//!    for it (one [`SCALE_DOWN_REQUEST`] line on its stdin) and only while it can still heal it
//!    ([`decide_scale_down`]: one per attempt, at least [`MIN_HEALER_TIME_LEFT`] before its
//!    deadline). It records `scaling-down` in `DIR/healer.json` before the request to the API
//!    server and the answer verbatim after ([`HealerScaleDown`]), and answers the runner with that
//!    record (one JSON line). The scale-down and the restore come from the same single-threaded
//!    process in that order, so no scale-down can ever follow the healer's last look: a runner
//!    stopped (Ctrl-Z, SIGSTOP, a stalled disk) before its request and continued after the
//!    deadline finds the healer gone (EPIPE/EOF: nothing is scaled) or is refused.
//!    At its deadline it restores the original replicas through the scale subresource unless
//!    they are already restored, and writes what it did to `DIR/healer.json`. SIGTERM, SIGINT or
//!    SIGHUP make it restore at once; a restore recorded by the runner in the ledger makes it check
//!    the live scale at once (`woke_by: runner-restored`, normally `already-restored`); its stdin
//!    closed before any request (the runner is gone: nothing can be scaled in this attempt) makes
//!    it check at once too (`woke_by: runner-closed`). It then exits.
//! 2. **The runner** restores on its own exit paths too, and records itself as the restorer.
//! 3. **The fault ledger** `DIR/ledger.json`, written by the runner *before* each action
//!    (`scaling-down` before it sends the request), so a later run sees an unfinished fault
//!    ([`unfinished_faults`]) and heals it ([`crate::faults::heal::heal_workdir`]).
//!
//! A fault directory is `<workdir>/faults/<fault_id>/` with `plan.json` (runner, before arming),
//! `ledger.json` (runner), `healer.json` (healer) and `healer.log` (the healer's stderr). The runner
//! and the healer never write the same file.
//!
//! Timestamps are RFC 3339 UTC with milliseconds; durations are seconds where the name ends in
//! `_sec` and milliseconds where it ends in `_ms`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::cluster::{Cluster, ScaleWrite};
use chrono::Utc;
use k8s_openapi::api::autoscaling::v1::Scale;
use serde::{Deserialize, Serialize};

use crate::error::LabError;
pub use crate::faults::attempt::AttemptFiles;
use crate::faults::attempt::{self, AttemptId, FaultKind};
use crate::faults::healer::{self, log_tail};
use crate::faults::process::ProcessRef;
pub use crate::faults::records::UndoneBy;
use crate::faults::records::{now_rfc3339, read_json, rfc3339, write_json_atomic};

/// Namespace of the Kyverno admission controller (chart 3.9.1 installed with `-n kyverno`).
pub const NAMESPACE: &str = "kyverno";
/// Name of the admission controller Deployment rendered by Kyverno's chart 3.9.1.
pub const DEPLOYMENT: &str = "kyverno-admission-controller";
/// The `action` of lab A's `scale-plan.json`, also the ledger's fault kind.
pub const FAULT_KIND: &str = "scale-controller-to-zero";
/// Replicas lab A's fault scales the Deployment to (a plan without `fault_replicas`).
pub const FAULT_REPLICAS: i32 = 0;
/// The ledger's fault kind of lab C's scale to three replicas (`ha-plan.json` `action`): the same
/// attempt protocol, healer and heal; only the value written differs ([`ScalePlan::fault_replicas`]).
pub const HA_FAULT_KIND: &str = "scale-controller-to-three";
/// The hidden subcommand of `kca-webhook-lab` that runs [`healer_main`].
pub const HEALER_SUBCOMMAND: &str = "healer-scale";
/// How long the runner waits for the healer's ready answer.
pub const READY_BOUND: Duration = Duration::from_secs(30);
/// After its deadline, how long the healer keeps retrying an unreachable API server.
pub const HEALER_RETRY_BOUND: Duration = Duration::from_secs(60);
/// The runner's request line (on the healer's stdin) asking the healer to scale to 0.
pub const SCALE_DOWN_REQUEST: &str = "scale-down";
/// How long the runner waits for the healer's answer to [`SCALE_DOWN_REQUEST`] (a read of the
/// scale, a record write and the scale request, conflicts retried).
pub const SCALE_DOWN_ANSWER_BOUND: Duration = Duration::from_secs(30);
/// Least time the healer must have left before its deadline to accept the scale-down
/// ([`decide_scale_down`]), so that act 5 can observe the fault before the restore; the request
/// normally follows the arming within a second, with 55 s left.
pub const MIN_HEALER_TIME_LEFT: Duration = Duration::from_secs(20);

/// Version of the files in a fault directory.
pub const SCHEMA_VERSION: u32 = 1;

/// Result alias of this module (errors are the crate's [`LabError`]).
pub type Result<T, E = LabError> = std::result::Result<T, E>;

/// What the healer (or anyone restoring) is told, written by the runner to `plan.json`
/// before the healer is spawned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalePlan {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Directory name under `<workdir>/faults/`, e.g. `scale-20261129T143000123Z`.
    pub fault_id: String,
    /// Always [`FAULT_KIND`].
    pub fault: String,
    /// Absolute path of the kubeconfig the healer uses.
    pub kubeconfig: PathBuf,
    /// Namespace of the Deployment ([`NAMESPACE`]).
    pub namespace: String,
    /// Name of the Deployment ([`DEPLOYMENT`]).
    pub deployment: String,
    /// `metadata.uid` of the Deployment (from the student's `scale-plan.json`).
    pub deployment_uid: String,
    /// Replicas to restore (from the student's `scale-plan.json`, checked against the live
    /// Deployment by the healer before it answers ready).
    pub original_replicas: i32,
    /// Seconds from the healer's ready answer to its restore (55 in lab A).
    pub restore_after_sec: u64,
    /// Replicas the fault sets: 0 in lab A (absent from its plans), 3 in lab C.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fault_replicas: i32,
    /// When the plan was written, RFC 3339 UTC (ms).
    pub created_at: String,
    /// The runner (act 5) that planned the attempt (absent in plans written before attempts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<ProcessRef>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl ScalePlan {
    /// Requires the plan to name the lab's Deployment ([`NAMESPACE`]/[`DEPLOYMENT`]): the
    /// Deployment the tool scales is the lab's constant, never one a file names (requests always
    /// go to the constants; this refuses a plan that says otherwise).
    ///
    /// Errors: [`LabError::FaultRefused`] naming what the plan says.
    pub fn check_target(&self) -> Result<()> {
        if self.namespace == NAMESPACE && self.deployment == DEPLOYMENT {
            Ok(())
        } else {
            Err(LabError::FaultRefused {
                reason: format!(
                    "the plan names deployment {}/{}; the lab scales only {NAMESPACE}/{DEPLOYMENT}",
                    self.namespace, self.deployment
                ),
            })
        }
    }
}

/// The healer's ready answer: one JSON line on its stdout, then stdout is closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealerReady {
    /// Whether the healer is armed; when false, `error` says why and it has exited.
    pub ok: bool,
    /// The healer's PID.
    pub pid: u32,
    /// When it armed, RFC 3339 UTC (ms); empty when not armed.
    pub armed_at: String,
    /// When it will restore, RFC 3339 UTC (ms); empty when not armed.
    pub deadline_at: String,
    /// `spec.replicas` of the live Deployment seen before arming.
    pub observed_replicas: Option<i32>,
    /// Why it refused to arm.
    pub error: Option<String>,
}

/// What the healer decided at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealerAction {
    /// Armed and waiting (the file is rewritten when it finishes).
    Waiting,
    /// The Deployment did not match the plan before arming; nothing was armed.
    Refused,
    /// The replicas were at the fault's value; the healer set them back.
    Restored,
    /// The replicas were already the original ones (restored by someone else).
    AlreadyRestored,
    /// The replicas had another value set by someone else; the healer left them alone.
    LeftAlone,
    /// The Deployment was gone or had another UID; the healer touched nothing.
    DeploymentChanged,
    /// The API server could not be reached within [`HEALER_RETRY_BOUND`] after the deadline.
    Failed,
}

/// `healer.json`: what the healer armed and what it did, written only by the healer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealerReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Same as the plan's.
    pub fault_id: String,
    /// The healer's PID.
    pub pid: u32,
    /// The healer's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), so a
    /// reader can tell this process from a later one with the same PID.
    #[serde(rename = "pid_start_ticks")]
    pub start_time_ticks: Option<u64>,
    /// When it armed, RFC 3339 UTC (ms).
    pub armed_at: String,
    /// `armed_at + restore_after_sec`, RFC 3339 UTC (ms).
    pub deadline_at: String,
    /// `spec.replicas` of the live Deployment when arming.
    pub observed_replicas: Option<i32>,
    /// What it did ([`HealerAction::Waiting`] until it finishes).
    pub action: HealerAction,
    /// Why it woke up: `deadline`, the signal's name (`SIGTERM`, `SIGINT`, `SIGHUP`),
    /// `runner-restored` (the ledger records a restore) or `runner-closed` (its stdin closed before
    /// any scale-down request).
    pub woke_by: Option<String>,
    /// When it read the scale at its deadline, RFC 3339 UTC (ms).
    pub checked_at: Option<String>,
    /// `spec.replicas` it read at its deadline.
    pub replicas_seen: Option<i32>,
    /// When its own restore was answered by the API server, RFC 3339 UTC (ms).
    pub restored_at: Option<String>,
    /// The last error, verbatim, when it failed or retried.
    pub error: Option<String>,
    /// When the healer finished, RFC 3339 UTC (ms).
    pub finished_at: Option<String>,
    /// The scale-down the healer did (or refused) on the runner's request; absent when none was
    /// asked for (and in records written before the healer owned the scale-down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_down: Option<HealerScaleDown>,
}

/// Where the healer's scale-down stands ([`HealerScaleDown::status`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleDownStatus {
    /// Recorded before the request to the API server is sent (the live scale was checked).
    ScalingDown,
    /// The API server accepted the scale to 0; `raw` is its answer.
    ScaledDown,
    /// Not done: too late, a second request, or the live Deployment did not match the plan.
    /// Nothing was scaled.
    Refused,
    /// The request to the API server failed (`error`); it may or may not have been applied, so
    /// the restore at the deadline still looks.
    Failed,
}

/// The healer's record of the scale-down it was asked for: in `healer.json` (`scale_down`) and,
/// as one JSON line on its stdout, its answer to the runner's [`SCALE_DOWN_REQUEST`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealerScaleDown {
    /// Where it stands.
    pub status: ScaleDownStatus,
    /// When the healer read the request, RFC 3339 UTC (ms).
    pub requested_at: String,
    /// Time left before the healer's deadline when it read the request, ms (monotonic clock).
    pub time_left_ms: u64,
    /// `spec.replicas` read before the request (absent when refused before reading).
    pub replicas_before: Option<i32>,
    /// When the scale request was sent, RFC 3339 UTC (ms).
    pub sent_at: Option<String>,
    /// When the API server answered it, RFC 3339 UTC (ms).
    pub answered_at: Option<String>,
    /// The scale object the API server returned, verbatim (`null` unless `scaled-down`).
    #[serde(default)]
    pub raw: serde_json::Value,
    /// Why it was refused or failed, verbatim.
    pub error: Option<String>,
}

/// The healer's pure decision on a [`SCALE_DOWN_REQUEST`]: accepted only when no scale-down was
/// asked for before in this attempt (`earlier`) and at least [`MIN_HEALER_TIME_LEFT`] is `left`
/// before its deadline. Because the healer itself then scales and only afterwards waits for its
/// deadline, an accepted scale-down is always followed by the healer's restore.
/// `Err` says why it is refused (nothing is scaled).
pub fn decide_scale_down(
    left: Duration,
    earlier: Option<&HealerScaleDown>,
) -> std::result::Result<(), String> {
    if let Some(e) = earlier {
        return Err(format!(
            "one scale-down per attempt: one was asked for at {} ({:?})",
            e.requested_at, e.status
        ));
    }
    if left < MIN_HEALER_TIME_LEFT {
        return Err(format!(
            "only {} ms left before the healer's deadline (at least {} s needed)",
            left.as_millis(),
            MIN_HEALER_TIME_LEFT.as_secs()
        ));
    }
    Ok(())
}

/// Events of the runner's ledger, in the order they normally happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LedgerEvent {
    /// `plan.json` written; the healer is about to be spawned.
    Planned,
    /// The healer answered ready (`watcher-armed` in ledgers written before the one vocabulary).
    #[serde(alias = "watcher-armed")]
    HealerArmed,
    /// About to scale the Deployment to 0 (written before the request).
    ScalingDown,
    /// The API server accepted the scale to 0.
    ScaledDown,
    /// About to restore the original replicas (written before the request).
    Restoring,
    /// The replicas are the original ones again (restored now or found restored).
    Restored,
    /// A restore attempt failed; the healer remains the safety net.
    RestoreFailed,
    /// Act 5 completed with the replicas still at 0: the fault is handed over to act 6 (or the
    /// healer at its deadline); a later heal leaves it alone while the healer lives.
    HandedOver,
}

/// One ledger entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// When the entry was written, RFC 3339 UTC (ms).
    pub at: String,
    /// What happened or is about to happen.
    pub event: LedgerEvent,
    /// Who acted, for restore events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<UndoneBy>,
    /// Details (PID, raw scale answer, error text).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: serde_json::Value,
}

/// `ledger.json`: the runner's record of one scale-down fault, rewritten atomically on every entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Same as the plan's.
    pub fault_id: String,
    /// Always [`FAULT_KIND`].
    pub fault: String,
    /// The entries, oldest first.
    pub entries: Vec<LedgerEntry>,
}

impl Ledger {
    /// The last entry of `event`, if any.
    pub fn last(&self, event: LedgerEvent) -> Option<&LedgerEntry> {
        self.entries.iter().rev().find(|e| e.event == event)
    }

    /// Whether the fault was acted on (a scale-down was at least attempted) and not yet
    /// recorded as restored.
    pub fn is_unfinished(&self) -> bool {
        let down = self
            .entries
            .iter()
            .rposition(|e| e.event == LedgerEvent::ScalingDown);
        let restored = self
            .entries
            .iter()
            .rposition(|e| e.event == LedgerEvent::Restored);
        match (down, restored) {
            (Some(d), Some(r)) => r < d,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

/// What a restore attempt found and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum RestoreOutcome {
    /// The replicas were at [`FAULT_REPLICAS`] and were set to the original value.
    Restored {
        /// When the API server answered the restore, RFC 3339 UTC (ms).
        at: String,
        /// The scale object the API server returned, verbatim.
        raw: serde_json::Value,
    },
    /// The replicas already were the original value.
    AlreadyRestored {
        /// When this was seen, RFC 3339 UTC (ms).
        at: String,
    },
    /// The replicas had another value (someone else changed them); nothing was done.
    LeftAlone {
        /// The replicas seen.
        replicas: i32,
        /// When this was seen, RFC 3339 UTC (ms).
        at: String,
    },
    /// The Deployment was gone or had another UID; nothing was done.
    DeploymentChanged {
        /// The UID seen (`None` when the Deployment was not found).
        uid: Option<String>,
        /// When this was seen, RFC 3339 UTC (ms).
        at: String,
    },
}

/// What [`decide_restore`] says to do with the replicas read from the scale subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreDecision {
    /// Set `spec.replicas` to the plan's original value.
    Restore,
    /// Nothing to do: already the original value.
    AlreadyRestored,
    /// Someone set another value: leave it.
    LeaveAlone,
    /// Not our Deployment (other UID or none): touch nothing.
    NotOurs,
}

/// Pure decision of a restorer from the live scale: restore only our Deployment (same UID) and
/// only from the value the fault set ([`ScalePlan::fault_replicas`]).
pub fn decide_restore(
    plan: &ScalePlan,
    live_uid: Option<&str>,
    live_replicas: i32,
) -> RestoreDecision {
    if live_uid != Some(plan.deployment_uid.as_str()) {
        RestoreDecision::NotOurs
    } else if live_replicas == plan.original_replicas {
        RestoreDecision::AlreadyRestored
    } else if live_replicas == plan.fault_replicas {
        RestoreDecision::Restore
    } else {
        RestoreDecision::LeaveAlone
    }
}

impl AttemptFiles {
    /// Reads the scale healer's report (`healer.json`, or `watcher.json` of an attempt made
    /// before the one vocabulary); `None` when the healer has not written it.
    pub fn read_scale_report(&self) -> Result<Option<HealerReport>> {
        let p = self.report_to_read();
        if std::fs::symlink_metadata(&p).is_ok() {
            read_json(&p).map(Some)
        } else {
            Ok(None)
        }
    }
    /// Reads the scale attempt's `ledger.json`.
    pub fn read_scale_ledger(&self) -> Result<Ledger> {
        read_json(&self.ledger())
    }
}

/// Reads the scale subresource of the lab's Deployment ([`NAMESPACE`]/[`DEPLOYMENT`]; `None`
/// when it is not found).
pub async fn read_scale(cluster: &Cluster) -> Result<Option<Scale>> {
    cluster.deployment_scale(NAMESPACE, DEPLOYMENT).await
}

/// What a write of `spec.replicas` does with the scale it has just read ([`decide_write`]).
#[derive(Debug)]
pub enum WriteStep {
    /// Write: our Deployment, still at `from`.
    Write,
    /// Nothing to write: someone else already set the value this write was for (after a 409, the
    /// healer's restore meeting act 6's): the restore counts as already restored.
    AlreadySet,
    /// Not ours (other UID), or changed by someone else to another value: nothing is written.
    Refuse(LabError),
}

/// The pure decision of one write from `from` to `replicas` on the scale `current` just read
/// (the first read, or the re-read after a 409 Conflict); `action` names the write in errors.
pub fn decide_write(
    plan: &ScalePlan,
    current: &Scale,
    from: i32,
    replicas: i32,
    action: &str,
) -> WriteStep {
    if current.metadata.uid.as_deref() != Some(plan.deployment_uid.as_str()) {
        return WriteStep::Refuse(LabError::ClusterMismatch {
            what: format!("uid of deployment {NAMESPACE}/{DEPLOYMENT}"),
            expected: plan.deployment_uid.clone(),
            found: current
                .metadata
                .uid
                .clone()
                .unwrap_or_else(|| "<none>".into()),
        });
    }
    let now = current.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    if now == replicas && now != from {
        return WriteStep::AlreadySet;
    }
    if now != from {
        return WriteStep::Refuse(LabError::ClusterMismatch {
            what: format!(
                "spec.replicas of deployment {NAMESPACE}/{DEPLOYMENT} (changed by someone else before {action})"
            ),
            expected: from.to_string(),
            found: now.to_string(),
        });
    }
    WriteStep::Write
}

/// Sets `spec.replicas` from `from` to `replicas` through the scale subresource with optimistic
/// concurrency (the scale's `resourceVersion` and the planned UID are checked). A 409 Conflict is
/// retried a few times, and each retry decides again: when the re-read scale is no longer at
/// `from` (someone else changed it meanwhile), nothing is written ([`LabError::ClusterMismatch`]).
/// Returns the scale object the API server answered with.
async fn put_replicas(
    cluster: &Cluster,
    plan: &ScalePlan,
    mut current: Scale,
    from: i32,
    replicas: i32,
) -> Result<Option<Scale>> {
    let action = format!(
        "setting {}/{} to {replicas} replicas through the scale subresource",
        plan.namespace, plan.deployment
    );
    for _ in 0..5 {
        match decide_write(plan, &current, from, replicas, &action) {
            WriteStep::Write => {}
            WriteStep::AlreadySet => return Ok(None),
            WriteStep::Refuse(e) => return Err(e),
        }
        let mut next = current.clone();
        next.spec.get_or_insert_with(Default::default).replicas = Some(replicas);
        match cluster
            .replace_deployment_scale(NAMESPACE, DEPLOYMENT, &next)
            .await
            .map_err(|e| LabError::Kube(format!("{action}: {e}")))?
        {
            ScaleWrite::Written(s) => return Ok(Some(*s)),
            ScaleWrite::Conflict => {
                current = read_scale(cluster)
                    .await?
                    .ok_or_else(|| LabError::ClusterMismatch {
                        what: format!(
                            "deployment {}/{} ({action})",
                            plan.namespace, plan.deployment
                        ),
                        expected: "present".into(),
                        found: "absent".into(),
                    })?;
            }
        }
    }
    Err(LabError::Kube(format!(
        "{action}: still conflicting after 5 attempts"
    )))
}

/// Restores the planned original replicas if (and only if) the planned Deployment is at the
/// fault's value; see [`decide_restore`]. Used by the runner, the healer and the healer alike.
pub async fn restore_replicas(cluster: &Cluster, plan: &ScalePlan) -> Result<RestoreOutcome> {
    let Some(scale) = read_scale(cluster).await? else {
        return Ok(RestoreOutcome::DeploymentChanged {
            uid: None,
            at: now_rfc3339(),
        });
    };
    let replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    match decide_restore(plan, scale.metadata.uid.as_deref(), replicas) {
        RestoreDecision::NotOurs => Ok(RestoreOutcome::DeploymentChanged {
            uid: scale.metadata.uid.clone(),
            at: now_rfc3339(),
        }),
        RestoreDecision::AlreadyRestored => {
            Ok(RestoreOutcome::AlreadyRestored { at: now_rfc3339() })
        }
        RestoreDecision::LeaveAlone => Ok(RestoreOutcome::LeftAlone {
            replicas,
            at: now_rfc3339(),
        }),
        RestoreDecision::Restore => Ok(restore_written(
            put_replicas(
                cluster,
                plan,
                scale,
                plan.fault_replicas,
                plan.original_replicas,
            )
            .await?,
        )),
    }
}

/// The outcome of a restore write (`put_replicas`): the API server's answer is `restored`;
/// no write (a 409 and a re-read that found the original replicas: the healer's restore met
/// act 6's, or the other way round) is `already-restored`, never an error.
pub fn restore_written(answer: Option<Scale>) -> RestoreOutcome {
    match answer {
        Some(answer) => RestoreOutcome::Restored {
            at: now_rfc3339(),
            raw: serde_json::to_value(&answer).unwrap_or(serde_json::Value::Null),
        },
        None => RestoreOutcome::AlreadyRestored { at: now_rfc3339() },
    }
}

/// The record of act 5's scale to 0 (its `scale-down` raw evidence), made from the healer's
/// answer ([`HealerScaleDown`] with status `scaled-down`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScaleDownRecord {
    /// When the request was sent, RFC 3339 UTC (ms).
    pub sent_at: String,
    /// When the API server answered, RFC 3339 UTC (ms).
    pub answered_at: String,
    /// `spec.replicas` before the request.
    pub replicas_before: i32,
    /// The scale object the API server returned, verbatim.
    pub raw: serde_json::Value,
}

/// What [`ScaleFault::arm_to`] plans: the act, the fault kind and the replicas the healer sets.
#[derive(Debug, Clone, Copy)]
pub struct ScaleTo {
    /// The act that arms the attempt (its id's act number).
    pub act: u8,
    /// The plan's and ledger's `fault` ([`FAULT_KIND`] or [`HA_FAULT_KIND`]).
    pub kind: &'static str,
    /// The replicas the healer sets on the runner's request.
    pub replicas: i32,
}

/// One armed scale-down fault, held by the runner.
///
/// Life: [`ScaleFault::arm`] (plan, ledger, healer ready) → [`ScaleFault::scale_down`] (the
/// runner's request; the healer scales) → [`ScaleFault::restore`] (or the healer at its
/// deadline). A later process reopens it with [`ScaleFault::open`] (without the pipes: it can
/// restore, never scale down).
pub struct ScaleFault {
    files: AttemptFiles,
    plan: ScalePlan,
    ledger: Ledger,
    cluster: Cluster,
    /// The healer's stdin (requests), only in the process that armed it.
    to_healer: Option<tokio::process::ChildStdin>,
    /// The healer's stdout (answers), only in the process that armed it.
    from_healer: Option<Answers>,
}

/// The healer's stdout as the runner reads it (one JSON line per answer).
type Answers = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>;

/// How long the runner's last look at the healer's pipe may take once its bound ran out.
const LAST_LOOK: Duration = Duration::from_secs(1);

/// Reads the healer's next answer line, waiting at most `bound`. When the bound runs out, looks
/// once more: a runner stopped meanwhile (Ctrl-Z, SIGSTOP) past the bound is woken by its timer
/// before its event loop has seen the pipe, so the kernel is asked directly (`poll(2)`, no wait)
/// and, when the pipe is readable or closed, the line (or EOF) is read within [`LAST_LOOK`].
/// `Ok(None)`: EOF (the healer closed stdout or exited). `Err(None)`: nothing within the bound.
///
/// Needed: without the last look, the lab_a row `fault_row_runner_sigstopped_before_its_request_…`
/// (act 5 stopped 55 s inside its 30 s ready wait) held 9 of 10 times on 2026-12-01 (10:05 UTC,
/// run 6): the continued runner reported "no answer" although the healer's ready line was in the
/// pipe (nothing was scaled; the message was wrong, not the safety).
async fn next_answer(
    lines: &mut Answers,
    bound: Duration,
) -> std::result::Result<Option<String>, Option<std::io::Error>> {
    use std::os::fd::AsFd as _;
    if let Ok(r) = tokio::time::timeout(bound, lines.next_line()).await {
        return r.map_err(Some);
    }
    let ready = {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let fd = lines.get_ref().get_ref().as_fd();
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
    };
    if !ready {
        return Err(None);
    }
    match tokio::time::timeout(LAST_LOOK, lines.next_line()).await {
        Ok(r) => r.map_err(Some),
        Err(_) => Err(None),
    }
}

/// The scale healer's report in words, for an error of the runner (what became of it).
fn healer_state(files: &AttemptFiles) -> String {
    match files.read_scale_report() {
        Ok(Some(w)) => format!(
            "its record: {:?}, woke by {}, finished at {}",
            w.action,
            w.woke_by.as_deref().unwrap_or("-"),
            w.finished_at.as_deref().unwrap_or("-")
        ),
        Ok(None) => "it wrote no record".into(),
        Err(e) => format!("its record is unreadable: {e}"),
    }
}

/// The runner's reading of the healer's answer to [`SCALE_DOWN_REQUEST`]: the record of a
/// `scaled-down` answer, or the error a refusal, a failure or an odd answer is.
fn scale_down_record(answer: &HealerScaleDown, line: &str) -> Result<ScaleDownRecord> {
    let error = answer
        .error
        .clone()
        .unwrap_or_else(|| "no reason given".into());
    match (
        answer.status,
        answer.sent_at.clone(),
        answer.answered_at.clone(),
        answer.replicas_before,
    ) {
        (ScaleDownStatus::ScaledDown, Some(sent_at), Some(answered_at), Some(before)) => {
            Ok(ScaleDownRecord {
                sent_at,
                answered_at,
                replicas_before: before,
                raw: answer.raw.clone(),
            })
        }
        (ScaleDownStatus::Refused, ..) => Err(LabError::FaultRefused {
            reason: format!(
                "the healer refused the scale-down: {error}; nothing was scaled (run the act again)"
            ),
        }),
        (ScaleDownStatus::Failed, ..) => Err(LabError::Kube(format!(
            "the healer's scale-down failed: {error}"
        ))),
        _ => Err(LabError::FaultRefused {
            reason: format!("unexpected answer of the healer: {line}"),
        }),
    }
}

impl ScaleFault {
    /// Arms the healer for a scale-down of `namespace/deployment`:
    /// creates `<workdir>/faults/<fault_id>/`, writes `plan.json` and a `planned` ledger entry,
    /// spawns `kca-webhook-lab healer-scale --attempt-dir DIR` detached (`setsid`: own session and
    /// process group; stdin and stdout pipes kept by the returned fault for the scale-down request
    /// and its answer, stderr `DIR/healer.log`), and waits at most
    /// [`READY_BOUND`] for its ready answer. The healer checks the live Deployment against the
    /// plan (UID, `spec.replicas == original_replicas`) before answering; a refusal is an error and
    /// nothing is scaled.
    ///
    /// The caller has already checked the lab mark and the student's plan against the cluster.
    pub async fn arm(
        cluster: Cluster,
        workdir: &Path,
        kubeconfig: &Path,
        deployment_uid: &str,
        original_replicas: i32,
        restore_after_sec: u64,
    ) -> Result<(ScaleFault, HealerReady)> {
        let to = ScaleTo {
            act: 5,
            kind: FAULT_KIND,
            replicas: FAULT_REPLICAS,
        };
        Self::arm_to(
            cluster,
            workdir,
            kubeconfig,
            deployment_uid,
            original_replicas,
            restore_after_sec,
            to,
        )
        .await
    }

    /// [`ScaleFault::arm`] for another value: act `to.act` plans a scale to `to.replicas` with
    /// fault kind `to.kind` (lab C's act 3: [`HA_FAULT_KIND`], 3). The request is still
    /// [`ScaleFault::scale_down`] (the healer's one request, whatever the direction).
    pub async fn arm_to(
        cluster: Cluster,
        workdir: &Path,
        kubeconfig: &Path,
        deployment_uid: &str,
        original_replicas: i32,
        restore_after_sec: u64,
        to: ScaleTo,
    ) -> Result<(ScaleFault, HealerReady)> {
        let now = Utc::now();
        let attempt = AttemptId::new(FaultKind::Scale, to.act);
        let fault_id = attempt.0.clone();
        let files = AttemptFiles::create(&attempt::faults_root(workdir), &attempt)?;
        let kubeconfig = std::path::absolute(kubeconfig).map_err(LabError::io(kubeconfig))?;
        let plan = ScalePlan {
            schema_version: SCHEMA_VERSION,
            fault_id: fault_id.clone(),
            fault: to.kind.to_string(),
            kubeconfig,
            namespace: NAMESPACE.to_string(),
            deployment: DEPLOYMENT.to_string(),
            deployment_uid: deployment_uid.to_string(),
            original_replicas,
            restore_after_sec,
            fault_replicas: to.replicas,
            created_at: rfc3339(now),
            runner: Some(ProcessRef::myself()),
        };
        write_json_atomic(&files.plan(), &plan)?;
        let mut fault = ScaleFault {
            files,
            plan,
            ledger: Ledger {
                schema_version: SCHEMA_VERSION,
                fault_id,
                fault: to.kind.to_string(),
                entries: Vec::new(),
            },
            cluster,
            to_healer: None,
            from_healer: None,
        };
        fault.record(LedgerEvent::Planned, None, serde_json::Value::Null)?;
        let ready = fault.spawn_healer().await?;
        fault.record(
            LedgerEvent::HealerArmed,
            None,
            serde_json::to_value(&ready).unwrap_or_default(),
        )?;
        Ok((fault, ready))
    }

    /// Reopens a fault directory written by an earlier process.
    pub fn open(cluster: Cluster, dir: &Path) -> Result<ScaleFault> {
        let files = AttemptFiles {
            dir: dir.to_path_buf(),
        };
        let plan: ScalePlan = read_json(&files.plan())?;
        plan.check_target()?;
        let ledger = files.read_scale_ledger()?;
        Ok(ScaleFault {
            files,
            plan,
            ledger,
            cluster,
            to_healer: None,
            from_healer: None,
        })
    }

    /// The plan.
    pub fn plan(&self) -> &ScalePlan {
        &self.plan
    }

    /// The attempt's files.
    pub fn files(&self) -> &AttemptFiles {
        &self.files
    }

    /// The ledger as written so far.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    fn record(
        &mut self,
        event: LedgerEvent,
        by: Option<UndoneBy>,
        detail: serde_json::Value,
    ) -> Result<()> {
        self.ledger.entries.push(LedgerEntry {
            at: now_rfc3339(),
            event,
            by,
            detail,
        });
        write_json_atomic(&self.files.ledger(), &self.ledger)
    }

    async fn spawn_healer(&mut self) -> Result<HealerReady> {
        use tokio::io::AsyncBufReadExt as _;
        let bin = attempt::lab_program()?;
        let log_path = self.files.log();
        let log = healer::log_file(&log_path).map_err(LabError::io(&log_path))?;
        let mut cmd = tokio::process::Command::from(healer::command(
            &bin,
            HEALER_SUBCOMMAND,
            &self.files.dir,
            Stdio::piped(),
            Stdio::from(log),
        ));
        cmd.kill_on_drop(false);
        let not_ready = |reason: String| LabError::FaultRefused {
            reason: format!(
                "healer not ready: {reason}; log {}: {}",
                log_path.display(),
                log_tail(&log_path)
            ),
        };
        let mut child = cmd.spawn().map_err(|e| {
            not_ready(format!(
                "spawning {} {HEALER_SUBCOMMAND}: {e}",
                bin.display()
            ))
        })?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| not_ready("no stdout pipe".into()))?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let line = match next_answer(&mut lines, READY_BOUND).await {
            Err(None) => {
                // The healer is ours and not armed: end it by its PID handle (the Child), never by name.
                let _ = child.start_kill();
                return Err(LabError::WaitTimedOut {
                    what: "the healer's ready answer".into(),
                    waited_ms: READY_BOUND.as_millis() as u64,
                    last_state: format!(
                        "no answer; log {}: {}",
                        log_path.display(),
                        log_tail(&log_path)
                    ),
                });
            }
            Err(Some(e)) => return Err(not_ready(format!("reading its ready answer: {e}"))),
            Ok(None) => {
                let status = child
                    .wait()
                    .await
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                return Err(not_ready(format!("it exited before answering ({status})")));
            }
            Ok(Some(line)) => line,
        };
        let ready: HealerReady = serde_json::from_str(&line)
            .map_err(|e| not_ready(format!("unreadable ready answer {line:?}: {e}")))?;
        if !ready.ok {
            let _ = child.wait().await;
            return Err(not_ready(format!(
                "it refused: {}",
                ready.error.as_deref().unwrap_or("no reason given")
            )));
        }
        self.to_healer = child.stdin.take();
        self.from_healer = Some(lines);
        // Reap the healer when it exits if this process still lives then; if not, init does.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        Ok(ready)
    }

    /// Asks the healer to scale the Deployment to [`FAULT_REPLICAS`] (module docs): writes
    /// a `scaling-down` ledger entry, sends [`SCALE_DOWN_REQUEST`] on the healer's stdin, waits at
    /// most [`SCALE_DOWN_ANSWER_BOUND`] for its answer ([`HealerScaleDown`]) and records
    /// `scaled-down` with that answer verbatim. The healer checks the live scale (planned UID, the
    /// planned original replicas) and its time left ([`decide_scale_down`]) before it scales.
    ///
    /// Errors: [`LabError::FaultRefused`] when the healer is not armed by this process, has exited
    /// (EPIPE, or its stdout closed without an answer) or refused (nothing scaled);
    /// [`LabError::WaitTimedOut`] without an answer in time; [`LabError::Kube`] when the healer's
    /// request to the API server failed. After any error the caller restores (the ledger says a
    /// scale-down may have happened).
    pub async fn scale_down(&mut self) -> Result<ScaleDownRecord> {
        use tokio::io::AsyncWriteExt as _;
        if self.ledger.last(LedgerEvent::HealerArmed).is_none() {
            return Err(LabError::FaultRefused {
                reason: "the healer is not armed".into(),
            });
        }
        let (Some(mut to), Some(mut from)) = (self.to_healer.take(), self.from_healer.take())
        else {
            return Err(LabError::FaultRefused {
                reason: "this process did not arm the healer (no request pipe); nothing was scaled"
                    .into(),
            });
        };
        self.record(
            LedgerEvent::ScalingDown,
            None,
            serde_json::json!({"replicas": self.plan.fault_replicas, "request": SCALE_DOWN_REQUEST}),
        )?;
        let sent = async {
            to.write_all(format!("{SCALE_DOWN_REQUEST}\n").as_bytes())
                .await?;
            to.flush().await
        }
        .await;
        if let Err(e) = sent {
            return Err(LabError::FaultRefused {
                reason: format!(
                    "the scale-down request could not reach the healer ({e}): it has exited ({}); nothing was scaled (run the act again)",
                    healer_state(&self.files)
                ),
            });
        }
        // The pipe stays open until this fault is dropped: the healer reads its closing as the
        // runner gone only before a request.
        self.to_healer = Some(to);
        let line = match next_answer(&mut from, SCALE_DOWN_ANSWER_BOUND).await {
            Err(None) => {
                return Err(LabError::WaitTimedOut {
                    what: "the healer's answer to the scale-down request".into(),
                    waited_ms: SCALE_DOWN_ANSWER_BOUND.as_millis() as u64,
                    last_state: format!("no answer; {}", healer_state(&self.files)),
                });
            }
            Err(Some(e)) => {
                return Err(LabError::FaultRefused {
                    reason: format!("reading the healer's answer: {e}"),
                });
            }
            Ok(None) => {
                return Err(LabError::FaultRefused {
                    reason: format!(
                        "the healer exited without answering the scale-down request ({})",
                        healer_state(&self.files)
                    ),
                });
            }
            Ok(Some(line)) => line,
        };
        let answer: HealerScaleDown =
            serde_json::from_str(&line).map_err(|e| LabError::FaultRefused {
                reason: format!("unreadable answer of the healer {line:?}: {e}"),
            })?;
        let record = scale_down_record(&answer, &line)?;
        self.record(
            LedgerEvent::ScaledDown,
            None,
            serde_json::to_value(&answer).unwrap_or_default(),
        )?;
        Ok(record)
    }

    /// Restores the original replicas as `by` (see [`restore_replicas`]), then records
    /// `restored` (or `restore-failed`) in the ledger. The restore comes first: a ledger that
    /// cannot be written (disk full) never blocks it; the write error is then returned after the
    /// restore was done, with the outcome in its text.
    pub async fn restore(&mut self, by: UndoneBy) -> Result<RestoreOutcome> {
        let result = restore_replicas(&self.cluster, &self.plan).await;
        match result {
            Ok(outcome) => {
                let event = match outcome {
                    RestoreOutcome::Restored { .. } | RestoreOutcome::AlreadyRestored { .. } => {
                        LedgerEvent::Restored
                    }
                    _ => LedgerEvent::RestoreFailed,
                };
                if let Err(e) = self.record(
                    event,
                    Some(by),
                    serde_json::to_value(&outcome).unwrap_or_default(),
                ) {
                    return Err(LabError::Io {
                        path: self.files.ledger(),
                        source: std::io::Error::other(format!(
                            "the replicas were handled ({outcome:?}) but the ledger could not be written: {e}"
                        )),
                    });
                }
                Ok(outcome)
            }
            Err(e) => {
                let _ = self.record(
                    LedgerEvent::RestoreFailed,
                    Some(by),
                    serde_json::json!({"error": e.to_string()}),
                );
                Err(e)
            }
        }
    }

    /// Records that act 5 completed with the fault still on (`handed-over`); see
    /// [`LedgerEvent::HandedOver`].
    pub fn hand_over(&mut self) -> Result<()> {
        self.record(LedgerEvent::HandedOver, None, serde_json::Value::Null)
    }

    /// Who really restored the replicas and when, as far as the ledger and `healer.json` say:
    /// the runner's own `Restored` outcome if it set them, else the healer's if it did.
    pub fn restored_by(&self) -> Result<Option<(UndoneBy, String)>> {
        for e in self.ledger.entries.iter().rev() {
            if e.event == LedgerEvent::Restored
                && e.detail.get("result").and_then(|r| r.as_str()) == Some("restored")
            {
                let at = e
                    .detail
                    .get("at")
                    .and_then(|a| a.as_str())
                    .unwrap_or(&e.at)
                    .to_string();
                return Ok(Some((e.by.unwrap_or(UndoneBy::Runner), at)));
            }
        }
        if let Some(w) = self.files.read_scale_report()?
            && w.action == HealerAction::Restored
            && let Some(at) = w.restored_at
        {
            return Ok(Some((UndoneBy::Healer, at)));
        }
        // A later command's heal (`heal.json`, its `restore` member: a [`RestoreOutcome`]).
        if let Ok(h) = read_json::<serde_json::Value>(&self.files.dir.join("heal.json"))
            && let Some(Ok(RestoreOutcome::Restored { at, .. })) = h
                .get("restore")
                .map(|r| serde_json::from_value::<RestoreOutcome>(r.clone()))
        {
            return Ok(Some((UndoneBy::LaterCommand, at)));
        }
        Ok(None)
    }
}

/// A fault directory whose ledger shows a scale-down without a recorded restore.
#[derive(Debug, Clone)]
pub struct Unfinished {
    /// The fault directory.
    pub dir: PathBuf,
    /// Its ledger.
    pub ledger: Ledger,
    /// Its healer's report, if the healer wrote one.
    pub healer: Option<HealerReport>,
}

/// Whether the healer's record says the fault is over: it `restored` the replicas or found
/// them `already-restored`, at or after the ledger's last `scaling-down`. A healer that finished
/// before the scale-down (its runner was stopped past the deadline, then continued) does not cover
/// it. `restored_at`, else `checked_at`, is when it finished; without a scale-down, any finish.
pub fn healer_finished_after_scale_down(ledger: &Ledger, healer: Option<&HealerReport>) -> bool {
    let Some(w) = healer else { return false };
    if !matches!(
        w.action,
        HealerAction::Restored | HealerAction::AlreadyRestored
    ) {
        return false;
    }
    let scaled = ledger
        .last(LedgerEvent::ScalingDown)
        .and_then(|e| crate::facts::parse_rfc3339(&e.at));
    let finished = w
        .restored_at
        .as_deref()
        .or(w.checked_at.as_deref())
        .and_then(crate::facts::parse_rfc3339);
    match (scaled, finished) {
        (None, _) => true,
        (Some(s), Some(f)) => f >= s,
        (Some(_), None) => false,
    }
}

/// Lists unfinished scale-down faults under `<workdir>/faults/` (oldest first). A missing
/// `faults` directory means none. A fault whose healer recorded its own restore is finished.
pub fn unfinished_faults(workdir: &Path) -> Result<Vec<Unfinished>> {
    let root = attempt::faults_root(workdir);
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LabError::Io { path: root, source }),
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("scale-"))
                && p.join("ledger.json").is_file()
                // Closed by a later command's heal (after a live read of the Deployment).
                && std::fs::symlink_metadata(p.join("heal.json")).is_err()
        })
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let fd = AttemptFiles { dir: dir.clone() };
        let ledger = fd.read_scale_ledger()?;
        let healer = fd.read_scale_report()?;
        if ledger.is_unfinished() && !healer_finished_after_scale_down(&ledger, healer.as_ref()) {
            out.push(Unfinished {
                dir,
                ledger,
                healer,
            });
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// The healer process.

/// One line on stderr (the healer's log file). Never panics: a write error (disk full, closed
/// file) is ignored, so logging can never stop a restore.
fn log(msg: impl AsRef<str>) {
    let _ = writeln!(
        std::io::stderr(),
        "{} healer-scale[{}]: {}",
        now_rfc3339(),
        std::process::id(),
        msg.as_ref()
    );
}

/// Whether the runner's ledger records a restore after its scale-down.
fn runner_recorded_restore(dir: &AttemptFiles) -> bool {
    dir.read_scale_ledger()
        .is_ok_and(|l| l.last(LedgerEvent::ScalingDown).is_some() && !l.is_unfinished())
}

/// Writes one answer line (JSON) on stdout, the pipe the runner reads. A write error (the runner
/// has gone away: EPIPE, SIGPIPE being ignored) is ignored; it never stops a restore.
fn answer<T: Serialize>(value: &T) {
    let line = serde_json::to_string(value).unwrap_or_else(|_| "{\"ok\":false}".into());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Writes the ready answer on stdout (see [`answer`]).
fn answer_ready(ready: &HealerReady) {
    answer(ready);
}

/// The runner's request pipe: stdin, which must be a pipe, registered with tokio (non-blocking).
fn request_pipe() -> std::io::Result<tokio::net::unix::pipe::Receiver> {
    use std::os::fd::AsFd as _;
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
}

/// The lab's Deployment read live for the healer's scale-down: it must have the planned UID and
/// `spec.replicas` at the planned original. `Err` is the replicas seen (when read) and why not.
async fn live_at_original(
    client: &Cluster,
    plan: &ScalePlan,
) -> std::result::Result<Scale, (Option<i32>, String)> {
    let scale = match read_scale(client).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Err((
                None,
                format!(
                    "deployment {}/{} not found",
                    plan.namespace, plan.deployment
                ),
            ));
        }
        Err(e) => return Err((None, e.to_string())),
    };
    let before = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    if scale.metadata.uid.as_deref() != Some(plan.deployment_uid.as_str())
        || before != plan.original_replicas
    {
        return Err((
            Some(before),
            format!(
                "deployment {}/{} has uid {} and spec.replicas {before}; the plan says uid {} and original_replicas {}",
                plan.namespace,
                plan.deployment,
                scale.metadata.uid.as_deref().unwrap_or("<none>"),
                plan.deployment_uid,
                plan.original_replicas
            ),
        ));
    }
    Ok(scale)
}

/// Serves the runner's [`SCALE_DOWN_REQUEST`] (module docs): decides with the time left before
/// `deadline` ([`decide_scale_down`]), checks the live scale against the plan, records
/// `scaling-down` in `healer.json` (nothing is scaled when that record cannot be written), scales
/// to [`FAULT_REPLICAS`] and records the API server's answer verbatim. Returns the record, which is
/// also the answer to the runner. A second request is refused without touching the first's record.
async fn serve_scale_down(
    client: &Cluster,
    plan: &ScalePlan,
    dir: &AttemptFiles,
    record: &mut HealerReport,
    deadline: tokio::time::Instant,
) -> HealerScaleDown {
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let mut sd = HealerScaleDown {
        status: ScaleDownStatus::Refused,
        requested_at: now_rfc3339(),
        time_left_ms: left.as_millis() as u64,
        replicas_before: None,
        sent_at: None,
        answered_at: None,
        raw: serde_json::Value::Null,
        error: None,
    };
    if let Err(why) = decide_scale_down(left, record.scale_down.as_ref()) {
        log(format!("scale-down refused: {why}"));
        sd.error = Some(why);
        if record.scale_down.is_none() {
            record.scale_down = Some(sd.clone());
            let _ = write_json_atomic(&dir.report(), record);
        }
        return sd;
    }
    let refuse = |record: &mut HealerReport, mut sd: HealerScaleDown, why: String| {
        log(format!("scale-down refused: {why}"));
        sd.status = ScaleDownStatus::Refused;
        sd.error = Some(why);
        record.scale_down = Some(sd.clone());
        let _ = write_json_atomic(&dir.report(), record);
        sd
    };
    let scale = match live_at_original(client, plan).await {
        Ok(scale) => scale,
        Err((before, why)) => {
            sd.replicas_before = before;
            return refuse(record, sd, why);
        }
    };
    let before = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    sd.replicas_before = Some(before);
    // Before the request: a later reader knows a scale-down may have been sent.
    sd.status = ScaleDownStatus::ScalingDown;
    record.scale_down = Some(sd.clone());
    if let Err(e) = write_json_atomic(&dir.report(), record) {
        return refuse(
            record,
            sd,
            format!("the scaling-down record could not be written: {e}"),
        );
    }
    sd.sent_at = Some(now_rfc3339());
    let to = plan.fault_replicas;
    let result = put_replicas(client, plan, scale, before, to)
        .await
        .and_then(|answer| {
            answer.ok_or_else(|| LabError::ClusterMismatch {
                what: format!("spec.replicas of deployment {NAMESPACE}/{DEPLOYMENT} (scaled to {to} by someone else)"),
                expected: before.to_string(),
                found: to.to_string(),
            })
        });
    sd.answered_at = Some(now_rfc3339());
    match result {
        Ok(answer) => {
            sd.status = ScaleDownStatus::ScaledDown;
            sd.raw = serde_json::to_value(&answer).unwrap_or_default();
            log(format!(
                "scaled to {to} at {} ({} ms before the deadline)",
                sd.answered_at.as_deref().unwrap_or("-"),
                sd.time_left_ms
            ));
        }
        Err(e) => {
            sd.status = ScaleDownStatus::Failed;
            sd.error = Some(e.to_string());
            log(format!("scale-down failed: {e}"));
        }
    }
    record.scale_down = Some(sd.clone());
    if let Err(e) = write_json_atomic(&dir.report(), record) {
        // The answer still reaches the runner (its ledger keeps it); the restore is unaffected.
        log(format!("writing the scale-down record: {e}"));
    }
    sd
}

/// Entry point of the detached healer (`kca-webhook-lab healer-scale --attempt-dir DIR`).
///
/// Reads `DIR/plan.json`, checks the live Deployment against it, answers ready (one JSON line of
/// [`HealerReady`] on stdout), then until `armed_at + restore_after_sec` serves the runner's
/// [`SCALE_DOWN_REQUEST`] on stdin (`serve_scale_down`; answer: one JSON line of
/// [`HealerScaleDown`]); at the deadline, on SIGTERM / SIGINT / SIGHUP, when the runner's ledger
/// records a restore, or when stdin closes before any request, it restores the original replicas
/// with [`restore_replicas`] (retrying an unreachable API server for at most
/// [`HEALER_RETRY_BOUND`]) and writes `DIR/healer.json`. Logs go to stderr.
/// Returns the exit code: 0 restored or already restored, 1 failed, 2 bad arguments, 3 refused.
pub fn healer_main(args: &[String]) -> i32 {
    let dir = match healer::attempt_dir_arg(HEALER_SUBCOMMAND, args) {
        Ok(dir) => dir,
        Err(usage) => {
            eprintln!("{usage}");
            return 2;
        }
    };
    // Opened once; the healer's records go through that fd.
    let (_opened, dir) = match healer::open_attempt_dir(&dir) {
        Ok(o) => o,
        Err(why) => {
            answer_ready(&refusal(why));
            return 3;
        }
    };
    let dir = AttemptFiles { dir };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            log(format!("starting the tokio runtime: {e}"));
            answer_ready(&refusal(format!("starting the tokio runtime: {e}")));
            return 1;
        }
    };
    let hardening = healer::harden();
    log(format!("hardening {hardening:?}"));
    rt.block_on(watch(dir))
}

fn refusal(error: String) -> HealerReady {
    HealerReady {
        ok: false,
        pid: std::process::id(),
        armed_at: String::new(),
        deadline_at: String::new(),
        observed_replicas: None,
        error: Some(error),
    }
}

/// The scale healer's life (see [`healer_main`]), in named steps: read the plan, check the live
/// Deployment, take the target lock, arm (record + ready answer), wait for its wake-up while
/// serving the runner's request, restore, record.
async fn watch(dir: AttemptFiles) -> i32 {
    let plan = match read_plan(&dir) {
        Ok(p) => p,
        Err(e) => {
            log(format!("refusing: {e}"));
            answer_ready(&refusal(e.to_string()));
            return 3;
        }
    };
    log(format!(
        "plan {}: {}/{} uid {} original replicas {} restore after {} s",
        plan.fault_id,
        plan.namespace,
        plan.deployment,
        plan.deployment_uid,
        plan.original_replicas,
        plan.restore_after_sec
    ));
    let mut record = HealerReport::refused(&plan);
    let refuse = |record: &mut HealerReport, error: String| {
        log(format!("refusing: {error}"));
        record.error = Some(error.clone());
        record.finished_at = Some(now_rfc3339());
        let _ = write_json_atomic(&dir.report(), record);
        answer_ready(&refusal(error));
        3
    };
    let client = match Cluster::connect(Some(&plan.kubeconfig)).await {
        Ok(c) => c,
        Err(e) => return refuse(&mut record, e.to_string()),
    };
    let live_replicas = match check_live_deployment(&client, &plan, &mut record).await {
        Ok(r) => r,
        Err(why) => return refuse(&mut record, why),
    };
    // One attempt per Deployment at a time: the target lock is held until this healer exits, so
    // no later attempt can scale it to 0 while this healer could still restore.
    let _target_lock = match attempt::lock_target(
        &format!("deployment-{}", plan.deployment_uid),
        &AttemptId(plan.fault_id.clone()),
        "the scale healer",
    ) {
        Ok(l) => l,
        Err(e) => return refuse(&mut record, e.to_string()),
    };
    let mut wake = match Wakers::new() {
        Ok(w) => w,
        Err(e) => {
            return refuse(
                &mut record,
                format!("stdin is not the runner's request pipe: {e}"),
            );
        }
    };
    let deadline = arm(&mut record, plan.restore_after_sec);
    if let Err(e) = write_json_atomic(&dir.report(), &record) {
        return refuse(&mut record, e.to_string());
    }
    answer_ready(&HealerReady {
        ok: true,
        pid: record.pid,
        armed_at: record.armed_at.clone(),
        deadline_at: record.deadline_at.clone(),
        observed_replicas: Some(live_replicas),
        error: None,
    });
    log(format!(
        "armed at {}, restoring at {}",
        record.armed_at, record.deadline_at
    ));
    let woke_by = wake
        .until_wake(&client, &plan, &dir, &mut record, deadline)
        .await;
    record.woke_by = Some(woke_by.to_string());
    let code = restore_at_wake(&client, &plan, &mut record).await;
    record.finished_at = Some(now_rfc3339());
    log(format!(
        "woke by {woke_by}; finished: {:?} (replicas seen {:?}, restored at {:?})",
        record.action, record.replicas_seen, record.restored_at
    ));
    if let Err(e) = write_json_atomic(&dir.report(), &record) {
        log(format!("writing the record: {e}"));
        return 1;
    }
    code
}

/// The healer's plan: `plan.json`, required to name the lab's Deployment.
fn read_plan(dir: &AttemptFiles) -> Result<ScalePlan> {
    let plan: ScalePlan = read_json(&dir.plan())?;
    plan.check_target()?;
    Ok(plan)
}

impl HealerReport {
    /// The report of a healer of `plan` that has not armed (yet): `refused` until it does.
    fn refused(plan: &ScalePlan) -> HealerReport {
        HealerReport {
            schema_version: SCHEMA_VERSION,
            fault_id: plan.fault_id.clone(),
            pid: std::process::id(),
            start_time_ticks: Some(ProcessRef::myself().start_time_ticks).filter(|t| *t != 0),
            armed_at: String::new(),
            deadline_at: String::new(),
            observed_replicas: None,
            action: HealerAction::Refused,
            woke_by: None,
            checked_at: None,
            replicas_seen: None,
            restored_at: None,
            error: None,
            finished_at: None,
            scale_down: None,
        }
    }
}

/// Cross-checks the plan with the live Deployment before anything is scaled: found, the planned
/// UID, `spec.replicas` at the planned original. Returns the live replicas (also recorded);
/// `Err` says why the healer refuses.
async fn check_live_deployment(
    client: &Cluster,
    plan: &ScalePlan,
    record: &mut HealerReport,
) -> std::result::Result<i32, String> {
    let scale = match read_scale(client).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return Err(format!(
                "deployment {}/{} not found",
                plan.namespace, plan.deployment
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let live_replicas = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
    record.observed_replicas = Some(live_replicas);
    if scale.metadata.uid.as_deref() != Some(plan.deployment_uid.as_str()) {
        return Err(format!(
            "deployment {}/{} has uid {}, the plan says {}",
            plan.namespace,
            plan.deployment,
            scale.metadata.uid.as_deref().unwrap_or("<none>"),
            plan.deployment_uid
        ));
    }
    if live_replicas != plan.original_replicas {
        return Err(format!(
            "deployment {}/{} has spec.replicas {live_replicas}, the plan says original_replicas {}",
            plan.namespace, plan.deployment, plan.original_replicas
        ));
    }
    Ok(live_replicas)
}

/// Arms the record now (`waiting`, `armed_at`, `deadline_at = armed_at + restore_after_sec`) and
/// returns the deadline on the monotonic clock.
fn arm(record: &mut HealerReport, restore_after_sec: u64) -> tokio::time::Instant {
    let armed = Utc::now();
    let wait = Duration::from_secs(restore_after_sec);
    let deadline = tokio::time::Instant::now() + wait;
    record.armed_at = rfc3339(armed);
    record.deadline_at = rfc3339(armed + chrono::Duration::from_std(wait).unwrap_or_default());
    record.action = HealerAction::Waiting;
    deadline
}

/// What wakes the scale healer besides its deadline: SIGTERM/SIGINT/SIGHUP and the runner's
/// request pipe (its stdin).
struct Wakers {
    sigterm: Option<tokio::signal::unix::Signal>,
    sigint: Option<tokio::signal::unix::Signal>,
    sighup: Option<tokio::signal::unix::Signal>,
    requests: Option<tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::pipe::Receiver>>>,
}

/// The next signal of an optional stream (never, when there is none).
async fn next_signal(s: &mut Option<tokio::signal::unix::Signal>) {
    match s.as_mut() {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}

impl Wakers {
    /// The signal streams and the request pipe; `Err` when stdin is not a pipe.
    fn new() -> std::io::Result<Wakers> {
        use tokio::io::AsyncBufReadExt as _;
        use tokio::signal::unix::{SignalKind, signal};
        let requests = tokio::io::BufReader::new(request_pipe()?).lines();
        Ok(Wakers {
            sigterm: signal(SignalKind::terminate()).ok(),
            sigint: signal(SignalKind::interrupt()).ok(),
            sighup: signal(SignalKind::hangup()).ok(),
            requests: Some(requests),
        })
    }

    /// Waits until the healer must restore, and says why: `deadline`, a signal's name,
    /// `runner-restored` (the runner's ledger records a restore: the healer checks the live scale
    /// at once, it never takes the ledger's word for it) or `runner-closed` (stdin closed before
    /// any request: the runner is gone and nothing can be scaled in this attempt). Meanwhile it
    /// serves the runner's scale-down request. A signal arriving while it serves the request is
    /// kept by its stream and ends the next turn.
    async fn until_wake(
        &mut self,
        client: &Cluster,
        plan: &ScalePlan,
        dir: &AttemptFiles,
        record: &mut HealerReport,
        deadline: tokio::time::Instant,
    ) -> &'static str {
        let mut asked = false;
        loop {
            let next_line = async {
                match self.requests.as_mut() {
                    Some(r) => r.next_line().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return "deadline",
                line = next_line => match line {
                    Ok(Some(l)) if l.trim() == SCALE_DOWN_REQUEST => {
                        asked = true;
                        answer(&serve_scale_down(client, plan, dir, record, deadline).await);
                    }
                    Ok(Some(l)) => log(format!("ignoring the line {l:?} on stdin")),
                    Ok(None) | Err(_) => {
                        self.requests = None;
                        if !asked {
                            return "runner-closed";
                        }
                    }
                },
                _ = next_signal(&mut self.sigterm) => return "SIGTERM",
                _ = next_signal(&mut self.sigint) => return "SIGINT",
                _ = next_signal(&mut self.sighup) => return "SIGHUP",
                _ = tokio::time::sleep(Duration::from_secs(1)) => {
                    if runner_recorded_restore(dir) {
                        return "runner-restored";
                    }
                }
            }
        }
    }
}

/// The healer's restore once woken: [`restore_replicas`] on a live read, retried every second
/// while the API server cannot be reached, for at most [`HEALER_RETRY_BOUND`]. Records what it
/// found and did; returns the exit code (0 settled, 1 failed).
async fn restore_at_wake(client: &Cluster, plan: &ScalePlan, record: &mut HealerReport) -> i32 {
    let give_up = tokio::time::Instant::now() + HEALER_RETRY_BOUND;
    loop {
        record.checked_at = Some(now_rfc3339());
        match read_scale(client).await {
            Ok(scale) => {
                record.replicas_seen = scale
                    .as_ref()
                    .map(|s| s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0));
            }
            Err(e) => record.error = Some(e.to_string()),
        }
        match restore_replicas(client, plan).await {
            Ok(outcome) => {
                record.error = None;
                record_outcome(record, outcome);
                return 0;
            }
            Err(e) => {
                log(format!("restore attempt failed: {e}"));
                record.error = Some(e.to_string());
                if tokio::time::Instant::now() >= give_up {
                    record.action = HealerAction::Failed;
                    return 1;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The healer's record of a restore outcome.
fn record_outcome(record: &mut HealerReport, outcome: RestoreOutcome) {
    match outcome {
        RestoreOutcome::Restored { at, .. } => {
            record.action = HealerAction::Restored;
            record.restored_at = Some(at);
        }
        RestoreOutcome::AlreadyRestored { .. } => {
            record.action = HealerAction::AlreadyRestored;
        }
        RestoreOutcome::LeftAlone { replicas, .. } => {
            record.action = HealerAction::LeftAlone;
            record.replicas_seen = Some(replicas);
        }
        RestoreOutcome::DeploymentChanged { uid, .. } => {
            record.action = HealerAction::DeploymentChanged;
            record.error = Some(format!(
                "deployment uid now {}",
                uid.as_deref().unwrap_or("<not found>")
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale_at(uid: &str, replicas: i32) -> Scale {
        let mut s = Scale::default();
        s.metadata.uid = Some(uid.into());
        s.spec = Some(k8s_openapi::api::autoscaling::v1::ScaleSpec {
            replicas: Some(replicas),
        });
        s
    }

    #[test]
    fn a_restore_meeting_another_restore_after_a_409_is_already_restored() {
        // Act 6's restore and the healer's race: one write wins, the other gets 409 Conflict and
        // re-reads the scale at the original replicas. That loser writes nothing and counts the
        // replicas as already restored (it was `interrupted` before).
        let p = plan();
        let reread = scale_at("uid-1", p.original_replicas);
        let step = decide_write(
            &p,
            &reread,
            FAULT_REPLICAS,
            p.original_replicas,
            "restoring",
        );
        assert!(matches!(step, WriteStep::AlreadySet), "{step:?}");
        assert!(matches!(
            restore_written(None),
            RestoreOutcome::AlreadyRestored { .. }
        ));
        // Still at the fault's value after the 409: written again.
        let step = decide_write(&p, &scale_at("uid-1", 0), FAULT_REPLICAS, 1, "restoring");
        assert!(matches!(step, WriteStep::Write), "{step:?}");
        // Changed by someone else to a third value, or another Deployment: nothing written.
        for other in [scale_at("uid-1", 3), scale_at("uid-2", 0)] {
            let step = decide_write(&p, &other, FAULT_REPLICAS, 1, "restoring");
            assert!(matches!(step, WriteStep::Refuse(_)), "{step:?}");
        }
    }

    #[test]
    fn records_written_before_the_one_vocabulary_still_read() {
        // A scale attempt made before the healer had one name: `watcher.json`, the ledger's
        // `watcher-armed` and `by: watcher`.
        let wd = tempfile::tempdir().expect("tempdir");
        let files = AttemptFiles {
            dir: wd.path().to_path_buf(),
        };
        assert_eq!(files.read_scale_report().expect("none yet"), None);
        let report = waiting_healer(7, Some(8), "a", "b");
        write_json_atomic(&wd.path().join("watcher.json"), &report).expect("watcher.json");
        assert_eq!(files.report_to_read(), wd.path().join("watcher.json"));
        assert_eq!(files.read_scale_report().expect("read"), Some(report));
        let ledger = serde_json::json!({
            "schema_version": SCHEMA_VERSION, "fault_id": "scale-x", "fault": FAULT_KIND,
            "entries": [
                {"at": "a", "event": "watcher-armed"},
                {"at": "b", "event": "restored", "by": "watcher"}
            ]
        });
        std::fs::write(files.ledger(), ledger.to_string()).expect("ledger");
        let ledger = files.read_scale_ledger().expect("an old ledger reads");
        assert_eq!(ledger.entries[0].event, LedgerEvent::HealerArmed);
        assert_eq!(ledger.entries[1].by, Some(UndoneBy::Healer));
        // Written today: the new names.
        let v = serde_json::to_value(&ledger.entries[0]).expect("json");
        assert_eq!(v["event"], "healer-armed");
        assert_eq!(
            serde_json::to_value(UndoneBy::Healer).expect("json"),
            "healer"
        );
    }

    #[test]
    fn the_healer_refuses_a_plan_naming_another_deployment() {
        for (ns, name) in [
            ("default", DEPLOYMENT),
            (NAMESPACE, "victim"),
            ("kube-system", "coredns"),
        ] {
            let wd = tempfile::tempdir().expect("tempdir");
            let files = AttemptFiles {
                dir: wd.path().to_path_buf(),
            };
            let mut p = plan();
            p.namespace = ns.into();
            p.deployment = name.into();
            write_json_atomic(&files.plan(), &p).expect("plan");
            let err = read_plan(&files).expect_err("a plan naming another deployment");
            let text = err.to_string();
            assert!(
                text.contains(&format!("{ns}/{name}"))
                    && text.contains(&format!("{NAMESPACE}/{DEPLOYMENT}")),
                "{text}"
            );
        }
    }

    fn plan() -> ScalePlan {
        ScalePlan {
            schema_version: SCHEMA_VERSION,
            fault_id: "scale-20261129T000000.000Z".into(),
            fault: FAULT_KIND.into(),
            kubeconfig: "/nonexistent/kubeconfig".into(),
            namespace: NAMESPACE.into(),
            deployment: DEPLOYMENT.into(),
            deployment_uid: "uid-1".into(),
            original_replicas: 1,
            restore_after_sec: 55,
            fault_replicas: FAULT_REPLICAS,
            created_at: "2026-11-29T00:00:00.000Z".into(),
            runner: None,
        }
    }

    #[test]
    fn decide_restore_only_restores_our_deployment_from_the_fault_value() {
        let p = plan();
        assert_eq!(
            decide_restore(&p, Some("uid-1"), 0),
            RestoreDecision::Restore
        );
        assert_eq!(
            decide_restore(&p, Some("uid-1"), 1),
            RestoreDecision::AlreadyRestored
        );
        assert_eq!(
            decide_restore(&p, Some("uid-1"), 3),
            RestoreDecision::LeaveAlone
        );
        assert_eq!(
            decide_restore(&p, Some("uid-2"), 0),
            RestoreDecision::NotOurs
        );
        assert_eq!(decide_restore(&p, None, 0), RestoreDecision::NotOurs);
    }

    fn entry(event: LedgerEvent) -> LedgerEntry {
        LedgerEntry {
            at: now_rfc3339(),
            event,
            by: None,
            detail: serde_json::Value::Null,
        }
    }

    /// A healer's record while it waits (pid, start ticks, armed and deadline times).
    fn waiting_healer(pid: u32, ticks: Option<u64>, armed: &str, deadline: &str) -> HealerReport {
        HealerReport {
            schema_version: SCHEMA_VERSION,
            fault_id: "f".into(),
            pid,
            start_time_ticks: ticks,
            armed_at: armed.into(),
            deadline_at: deadline.into(),
            observed_replicas: Some(1),
            action: HealerAction::Waiting,
            woke_by: None,
            checked_at: None,
            replicas_seen: None,
            restored_at: None,
            error: None,
            finished_at: None,
            scale_down: None,
        }
    }

    #[test]
    fn ledger_is_unfinished_between_scale_down_and_restore() {
        let mut l = Ledger {
            schema_version: SCHEMA_VERSION,
            fault_id: "f".into(),
            fault: FAULT_KIND.into(),
            entries: vec![entry(LedgerEvent::Planned), entry(LedgerEvent::HealerArmed)],
        };
        assert!(!l.is_unfinished(), "nothing acted on yet");
        l.entries.push(entry(LedgerEvent::ScalingDown));
        assert!(l.is_unfinished(), "scale-down attempted, no restore");
        l.entries.push(entry(LedgerEvent::ScaledDown));
        l.entries.push(entry(LedgerEvent::RestoreFailed));
        assert!(l.is_unfinished(), "a failed restore does not finish it");
        l.entries.push(entry(LedgerEvent::Restored));
        assert!(!l.is_unfinished());
    }

    #[test]
    fn unfinished_faults_reads_fault_dirs_and_honours_the_healer_report() {
        let wd = tempfile::tempdir().expect("tempdir");
        assert!(
            unfinished_faults(wd.path())
                .expect("no faults dir")
                .is_empty()
        );
        let dir = AttemptFiles {
            dir: crate::faults::attempt::faults_root(wd.path()).join("scale-20261129T000000.000Z"),
        };
        std::fs::create_dir_all(&dir.dir).expect("mkdir");
        write_json_atomic(&dir.plan(), &plan()).expect("plan");
        let ledger = Ledger {
            schema_version: SCHEMA_VERSION,
            fault_id: "f".into(),
            fault: FAULT_KIND.into(),
            entries: vec![
                entry(LedgerEvent::ScalingDown),
                entry(LedgerEvent::ScaledDown),
            ],
        };
        write_json_atomic(&dir.ledger(), &ledger).expect("ledger");
        let found = unfinished_faults(wd.path()).expect("list");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].dir, dir.dir);
        let mut w = waiting_healer(1, None, &now_rfc3339(), &now_rfc3339());
        write_json_atomic(&dir.report(), &w).expect("healer.json");
        assert_eq!(
            unfinished_faults(wd.path()).expect("list").len(),
            1,
            "waiting healer"
        );
        w.action = HealerAction::Restored;
        w.restored_at = Some(now_rfc3339());
        write_json_atomic(&dir.report(), &w).expect("healer.json");
        assert!(
            unfinished_faults(wd.path()).expect("list").is_empty(),
            "the healer restored it"
        );
        // A healer that found nothing to do before a late scale-down does not cover it.
        w.action = HealerAction::AlreadyRestored;
        w.restored_at = None;
        w.checked_at = Some("2026-11-29T00:00:00.000Z".into());
        write_json_atomic(&dir.report(), &w).expect("healer.json");
        assert_eq!(
            unfinished_faults(wd.path()).expect("list").len(),
            1,
            "the scale-down came after the healer's check"
        );
    }

    #[test]
    fn a_scale_down_is_accepted_once_and_only_with_time_left() {
        assert_eq!(decide_scale_down(Duration::from_secs(55), None), Ok(()));
        assert_eq!(decide_scale_down(MIN_HEALER_TIME_LEFT, None), Ok(()));
        // The runner was stopped until 10 s before the deadline, or past it.
        let late = decide_scale_down(Duration::from_secs(10), None).unwrap_err();
        assert!(late.contains("10000 ms left"), "{late}");
        assert!(decide_scale_down(Duration::ZERO, None).is_err());
        assert!(decide_scale_down(MIN_HEALER_TIME_LEFT - Duration::from_millis(1), None).is_err());
        // A second request in one attempt, whatever the first became.
        let first = HealerScaleDown {
            status: ScaleDownStatus::Refused,
            requested_at: "2026-12-01T05:00:00.000Z".into(),
            time_left_ms: 54_000,
            replicas_before: None,
            sent_at: None,
            answered_at: None,
            raw: serde_json::Value::Null,
            error: Some("x".into()),
        };
        let again = decide_scale_down(Duration::from_secs(50), Some(&first)).unwrap_err();
        assert!(again.contains("one scale-down per attempt"), "{again}");
    }

    #[test]
    fn a_healer_report_without_scale_down_still_reads() {
        // A report written before the healer owned the scale-down has no `scale_down`.
        let mut v = serde_json::to_value(waiting_healer(1, Some(2), "a", "b")).expect("json");
        assert!(v.get("scale_down").is_none(), "absent when none: {v}");
        v.as_object_mut().expect("object").remove("scale_down");
        let w: HealerReport = serde_json::from_value(v).expect("old record");
        assert_eq!(w.scale_down, None);
    }

    #[test]
    fn healer_main_rejects_bad_arguments() {
        assert_eq!(healer_main(&["--nope".into()]), 2);
        assert_eq!(healer_main(&[]), 2);
    }

    #[test]
    fn plan_round_trips_and_rejects_unknown_fields() {
        let p = plan();
        let v = serde_json::to_value(&p).expect("to json");
        let back: ScalePlan = serde_json::from_value(v.clone()).expect("from json");
        assert_eq!(back, p);
        let mut bad = v;
        bad["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<ScalePlan>(bad).is_err());
    }
}
