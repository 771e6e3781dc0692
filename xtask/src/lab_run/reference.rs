//! The answer keys: the reference (correct) content of every student input file of every lab,
//! written by `cargo xtask lab run` before the act that reads it, and used by the lab crate's
//! tests (which include this file). They live here, not in the `lab` crate, so the student binary
//! ships no answers; the types, schemas and validation stay in `lab::inputs`.
//!
//! Pure: a function of [`Context`] (the live values `inspect` prints and the evidence digests).

use lab::inputs::*;

/// The reference (correct) content of `file`, for `cargo xtask lab run` and tests.
///
/// Values that depend on the cluster or the evidence come from `ctx`; `None` when `ctx` lacks one
/// the file needs (`node_uid`, `namespaces`, `deployment_uid`, `policy_uid`, evidence digests).
/// Lab A's `report.json` depends on what act 5 observed: use [`report_a`]; lab C's on acts 5-7:
/// use [`report_c`].
pub fn value(file: InputFile, ctx: &Context) -> Option<serde_json::Value> {
    let digest = |act: u8| ctx.evidence_digests.get(&act).cloned().map(Sha256Hex);
    let node_uid = || ctx.node_uid.clone().map(Uid);
    let deployment_uid = || ctx.deployment_uid.clone().map(Uid);
    let v = match file {
        InputFile::Scope => {
            let ns = ctx.namespaces.as_ref()?;
            serde_json::to_value(Scope {
                target: TargetNamespace,
                control: ControlNamespace,
                node_uid: node_uid()?,
                namespaces: ScopeNamespaces {
                    target: Uid(ns.get(TargetNamespace::VALUE)?.clone()),
                    control: Uid(ns.get(ControlNamespace::VALUE)?.clone()),
                },
            })
        }
        InputFile::Policy => serde_json::to_value(policy(FailPolicy)),
        InputFile::PolicyIgnore => serde_json::to_value(policy(IgnorePolicy)),
        InputFile::FreezePlan => serde_json::to_value(FreezePlan {
            action: FreezeAction,
            node_uid: node_uid()?,
            deployment_uid: deployment_uid()?,
            resume_after_sec: ResumeAfterSec,
            signal_identity: PidfdIdentity,
            preserve_webhook: WebhookPreserved,
            evidence_sha256: digest(3)?,
        }),
        InputFile::Recovery => serde_json::to_value(Recovery {
            mode: IgnorePolicy,
            healthy_bad: ExplicitDenyWord,
            existing: SameUidRunning,
            policy_uid: Uid(ctx.policy_uid.clone()?),
            ignore_evidence_sha256: digest(6)?,
        }),
        InputFile::ReportB => serde_json::to_value(ReportB {
            fail: MatchingRequestsTimeout,
            ignore: UnvalidatedRequestStored,
            healthy_ignore: ExplicitDenyWord,
            control: OutsideSelector,
            existing: SameUidRunning,
            fail_evidence_sha256: digest(5)?,
            ignore_evidence_sha256: digest(6)?,
            recovery_evidence_sha256: digest(7)?,
        }),
        InputFile::ScalePlan => serde_json::to_value(ScalePlan {
            action: ScaleAction,
            node_uid: node_uid()?,
            deployment_uid: deployment_uid()?,
            original_replicas: OriginalReplicas,
            restore_after_sec: RestoreAfterSec,
            evidence_sha256: digest(3)?,
        }),
        InputFile::ReportA => return None,
        InputFile::HaPlan => serde_json::to_value(HaPlan {
            action: HaAction,
            node_uid: node_uid()?,
            deployment_uid: deployment_uid()?,
            original_replicas: OriginalReplicas,
            replicas: HaReplicas,
        }),
        InputFile::FreezePlanC => serde_json::to_value(FreezePlanC {
            action: FreezeAction,
            target: LeaderTarget,
            node_uid: node_uid()?,
            deployment_uid: deployment_uid()?,
            resume_after_sec: ResumeAfterSec,
            signal_identity: PidfdIdentity,
            preserve_webhook: WebhookPreserved,
            evidence_sha256: digest(3)?,
        }),
        InputFile::RecoveryC => serde_json::to_value(RecoveryC {
            mode: IgnorePolicy,
            replicas: OriginalReplicas,
            policy_uid: Uid(ctx.policy_uid.clone()?),
            ignore_evidence_sha256: digest(6)?,
        }),
        InputFile::ReportC => return None,
    };
    v.ok()
}

/// The reference lab C `report.json`: the words `words` gives per field (the evidence's, from
/// `lab::rules::c::report_expectations`) and the digests of 05/06/07 in `ctx`. `None` when a
/// word is none of the report's (the evidence shows something no report word names: the run
/// writes no reference report then, and act 8 refuses what a student would write).
pub fn report_c(ctx: &Context, words: &[(&str, String)]) -> Option<serde_json::Value> {
    let digest = |act: u8| ctx.evidence_digests.get(&act).cloned();
    let mut report = serde_json::Map::new();
    for (field, word) in words {
        report.insert((*field).to_owned(), word.clone().into());
    }
    for (field, act) in [
        ("leader_freeze_evidence_sha256", 5u8),
        ("follower_freeze_evidence_sha256", 6),
        ("recovery_evidence_sha256", 7),
    ] {
        report.insert(field.to_owned(), digest(act)?.into());
    }
    let value = serde_json::Value::Object(report);
    serde_json::from_value::<ReportC>(value.clone()).ok()?;
    Some(value)
}

/// The reference lab A `report.json`, given what act 5 observed (`registration_kept`: the policy's
/// webhook was still registered after the scale-down) and the digests of 05/06/07 in `ctx`.
pub fn report_a(ctx: &Context, registration_kept: bool) -> Option<serde_json::Value> {
    let digest = |act: u8| ctx.evidence_digests.get(&act).cloned().map(Sha256Hex);
    let (scale_down, request) = if registration_kept {
        (
            ScaleDownResult::RegistrationKept,
            ScaleRequestResult::RejectedWebhookUnreachable,
        )
    } else {
        (
            ScaleDownResult::RegistrationAbsent,
            ScaleRequestResult::AdmittedWithoutWebhook,
        )
    };
    serde_json::to_value(ReportA {
        scale_down,
        policy: PresentWord,
        request,
        recovery: LeaseRegistrationDeny,
        dry_run: ValidatedNotStored,
        existing: SameUidRunning,
        scale_evidence_sha256: digest(5)?,
        recovery_evidence_sha256: digest(6)?,
        dry_run_evidence_sha256: digest(7)?,
    })
    .ok()
}

/// The course's ValidatingPolicy (`docs/labs.md`, act 2) with `failure_policy`.
pub fn policy<F: FailurePolicyConst>(failure_policy: F) -> ValidatingPolicy<F> {
    ValidatingPolicy {
        api_version: PolicyApiVersion,
        kind: PolicyKind,
        metadata: PolicyMetadata { name: PolicyName },
        spec: PolicySpec {
            validation_actions: (DenyAction,),
            failure_policy,
            webhook_configuration: WebhookConfiguration {
                timeout_seconds: WebhookTimeoutSec,
            },
            evaluation: Evaluation {
                background: Background {
                    enabled: BackgroundDisabled,
                },
            },
            match_constraints: MatchConstraints {
                namespace_selector: NamespaceSelector {
                    match_labels: TargetMatchLabels {
                        name: TargetNamespace,
                    },
                },
                resource_rules: (ResourceRule {
                    api_groups: (CoreGroup,),
                    api_versions: (PodsApiVersion,),
                    operations: (CreateOperation,),
                    resources: (PodsResource,),
                },),
            },
            validations: (Validation {
                expression: LabelExpression,
                message: RequiredMessage,
            },),
        },
    }
}
