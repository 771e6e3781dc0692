//! Typed student input files of every lab, strict validation, and their JSON Schemas.
//!
//! Every file is a Rust type with `deny_unknown_fields` at every level ("no unnecessary fields");
//! every value the course fixes (`docs/labs.md`) is a constant type that accepts exactly
//! that value and shows up in the JSON Schema as `const`. Values that depend on the cluster
//! (node, namespace and deployment UIDs) or on evidence (`*_evidence_sha256`, `policy_uid`) are
//! checked for their shape offline, and for their value when a [`Context`] holds the expected value:
//! `check FILE` validates with [`Context::default`] (shape and constants), acts validate with
//! the live cluster's values and the evidence digests.
//!
//! Every problem is reported as an [`InputIssue`]: file, JSON path (`$.spec.validations[0].message`),
//! expected, found, and every problem of a file at once: the raw JSON is checked against the
//! file's JSON Schema first (`shape`, with the `jsonschema` crate: every missing or unknown member,
//! wrong value and wrong length), then against the context; serde, which stops at its first error,
//! only builds the typed value of a file that passed both.
//!
//! The values validated here come from the one reader, [`crate::json`], which has already refused
//! what is not I-JSON (duplicate member names, inexact integers, a BOM, trailing data, …) and
//! returns numbers in canonical form: a fixed value of `3` accepts `3.0` and `3e0` (the same
//! number, the same canonical digest, and `const: 3` in JSON Schema accepts them too).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{InputIssue, LabError};
use crate::json::{json_path, push_key};
use crate::messages::said;
use crate::text::Words;

/// The student input files, declared once: each kind's [`InputFile`] variant and its doc, the
/// type that validates it, how [`AnyInput`] holds that type, and the file name. From this table
/// come [`InputFile`], [`InputFile::file_name`], [`AnyInput`], [`validate`], the types of
/// [`schema`] and the [`StudentInput`] impls.
macro_rules! input_files {
    ($($(#[$doc:meta])* $v:ident: $ty:ty => $held:ty, $file:literal;)+) => {
        /// One kind of student input file. `report.json` differs between the labs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum InputFile { $($(#[$doc])* $v,)+ }

        impl InputFile {
            /// The file name in the work directory.
            pub fn file_name(self) -> &'static str {
                match self { $(InputFile::$v => $file,)+ }
            }
        }

        /// Any validated student input (the variants of [`InputFile`]).
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyInput { $($(#[$doc])* $v($held),)+ }

        $(impl StudentInput for $ty {
            const FILE: InputFile = InputFile::$v;
        })+

        /// Validates the JSON of `file` (see [`parse`]).
        ///
        /// Errors: as [`parse`].
        pub fn validate(
            file: InputFile,
            value: &serde_json::Value,
            ctx: &Context,
        ) -> Result<AnyInput, LabError> {
            Ok(match file { $(InputFile::$v => AnyInput::$v(parse::<$ty>(value, ctx)?.into()),)+ })
        }

        /// The schemars schema of `file`'s type.
        fn type_schema(file: InputFile) -> Schema {
            match file { $(InputFile::$v => schemars::schema_for!($ty),)+ }
        }
    };
}

input_files! {
    /// `scope.json` (every lab, act 1).
    Scope: Scope => Scope, "scope.json";
    /// `policy.json` (every lab, act 2).
    Policy: Policy => Box<Policy>, "policy.json";
    /// `freeze-plan.json` (lab B, act 4).
    FreezePlan: FreezePlan => FreezePlan, "freeze-plan.json";
    /// `policy-ignore.json` (lab B, act 6).
    PolicyIgnore: PolicyIgnore => Box<PolicyIgnore>, "policy-ignore.json";
    /// `recovery.json` (lab B, act 7).
    Recovery: Recovery => Recovery, "recovery.json";
    /// `report.json` of lab B (act 8).
    ReportB: ReportB => ReportB, "report.json";
    /// `scale-plan.json` (lab A, act 4).
    ScalePlan: ScalePlan => ScalePlan, "scale-plan.json";
    /// `report.json` of lab A (act 8).
    ReportA: ReportA => ReportA, "report.json";
    /// `ha-plan.json` (lab C, act 3).
    HaPlan: HaPlan => HaPlan, "ha-plan.json";
    /// `freeze-plan.json` of lab C (act 4): lab B's plan plus `target`.
    FreezePlanC: FreezePlanC => FreezePlanC, "freeze-plan.json";
    /// `recovery.json` of lab C (act 7): the scale back to the original count.
    RecoveryC: RecoveryC => RecoveryC, "recovery.json";
    /// `report.json` of lab C (act 8).
    ReportC: ReportC => ReportC, "report.json";
}

/// Where the value of a bound field comes from; defined beside [`InputIssue`], which carries it.
pub use crate::error::Source;

impl InputFile {
    /// The fields of this file bound to the live cluster or to the evidence, as `(JSON path,
    /// source)`, in document order: what a student copies in from `inspect`, `digest` or an
    /// evidence file. The validation checks exactly these
    /// (`check_bound_fields`). `policy-ignore.json` is bound to `policy.json` as a whole, not field by
    /// field.
    pub fn bound_fields(self) -> &'static [(&'static str, Source)] {
        const PLAN: &[(&str, Source)] = &[
            ("$.node_uid", Source::NodeUid),
            ("$.deployment_uid", Source::DeploymentUid),
            ("$.evidence_sha256", Source::Digest(3)),
        ];
        match self {
            InputFile::Scope => &[
                ("$.node_uid", Source::NodeUid),
                (
                    "$.namespaces[\"kca-webhook-target\"]",
                    Source::NamespaceUid(TargetNamespace::VALUE),
                ),
                (
                    "$.namespaces[\"kca-webhook-control\"]",
                    Source::NamespaceUid(ControlNamespace::VALUE),
                ),
            ],
            InputFile::Policy | InputFile::PolicyIgnore => &[],
            // `ha-plan.json` has the other plans' fields but the digest.
            InputFile::HaPlan => &PLAN[..2],
            InputFile::FreezePlan | InputFile::FreezePlanC | InputFile::ScalePlan => PLAN,
            InputFile::Recovery | InputFile::RecoveryC => &[
                ("$.policy_uid", Source::PolicyUid),
                ("$.ignore_evidence_sha256", Source::Digest(6)),
            ],
            InputFile::ReportB => &[
                ("$.fail_evidence_sha256", Source::Digest(5)),
                ("$.ignore_evidence_sha256", Source::Digest(6)),
                ("$.recovery_evidence_sha256", Source::Digest(7)),
            ],
            InputFile::ReportA => &[
                ("$.scale_evidence_sha256", Source::Digest(5)),
                ("$.recovery_evidence_sha256", Source::Digest(6)),
                ("$.dry_run_evidence_sha256", Source::Digest(7)),
            ],
            InputFile::ReportC => &[
                ("$.leader_freeze_evidence_sha256", Source::Digest(5)),
                ("$.follower_freeze_evidence_sha256", Source::Digest(6)),
                ("$.recovery_evidence_sha256", Source::Digest(7)),
            ],
        }
    }
}

/// Expected values that depend on the cluster or on evidence. A `None` (or missing map entry)
/// skips that check; [`Context::default`] is the offline context of `check FILE`.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Live node UID.
    pub node_uid: Option<String>,
    /// Live namespace name → UID (at least `kca-webhook-target` and `kca-webhook-control`).
    pub namespaces: Option<BTreeMap<String, String>>,
    /// Live UID of the `kyverno-admission-controller` Deployment.
    pub deployment_uid: Option<String>,
    /// `facts.policy.metadata.uid` of `evidence/02.json`.
    pub policy_uid: Option<String>,
    /// Act number → canonical digest of `evidence/NN.json`.
    pub evidence_digests: BTreeMap<u8, String>,
    /// The student's `policy.json` (parsed), which `policy-ignore.json` must equal except
    /// `spec.failurePolicy`.
    pub policy: Option<serde_json::Value>,
}

// ---------------------------------------------------------------------------------------------
// Constant and pattern types.

/// `impl JsonSchema for $name`: inlined, named after the type, with the schema `$schema`.
macro_rules! inline_schema {
    ($name:ident, $schema:expr) => {
        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                $schema
            }
        }
    };
}

/// Reads one JSON value and keeps what `accept` makes of it; a value it refuses is the error
/// `expected {what}, found {value}`.
fn accept_value<'de, D: Deserializer<'de>, T>(
    d: D,
    what: impl std::fmt::Display,
    accept: impl FnOnce(&serde_json::Value) -> Option<T>,
) -> Result<T, D::Error> {
    let found = serde_json::Value::deserialize(d)?;
    accept(&found).ok_or_else(|| D::Error::custom(format_args!("expected {what}, found {found}")))
}

/// Constant types, each `/// doc` `Name: type = value;`: a unit struct that (de)serializes as exactly
/// `value` and shows in the JSON Schema as `const`.
macro_rules! constant {
    ($($(#[$m:meta])* $name:ident : $ty:ty = $value:expr;)+) => {$(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl $name {
            /// The only accepted value.
            pub const VALUE: $ty = $value;
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                Self::VALUE.serialize(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = serde_json::json!(Self::VALUE);
                accept_value(d, &v, |found| (*found == v).then_some($name))
            }
        }

        inline_schema!($name, {
            let v = serde_json::json!(Self::VALUE);
            let ty = match &v {
                serde_json::Value::Bool(_) => "boolean",
                serde_json::Value::Number(_) => "integer",
                _ => "string",
            };
            json_schema!({ "type": ty, "const": v })
        });
    )+};
}

/// Closed sets of words, each `/// doc` `Name { Variant = "word", … }`: an enum that (de)serializes
/// as its words and shows in the JSON Schema as `enum`.
macro_rules! one_of {
    ($($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $value:literal),+ $(,)? })+) => {$(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every accepted value, in declaration order.
            pub const VALUES: &'static [&'static str] = &[$($value),+];
            /// The wire value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $value),+ }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let words = Self::VALUES.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>();
                accept_value(d, format_args!("one of {}", words.join(", ")), |found| {
                    match found.as_str() {
                        $(Some($value) => Some($name::$variant),)+
                        _ => None,
                    }
                })
            }
        }

        inline_schema!($name, json_schema!({ "type": "string", "enum": Self::VALUES }));
    )+};
}

macro_rules! patterned {
    ($(#[$m:meta])* $name:ident, $what:literal, $pattern:literal, $check:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// What the value is, in words (the expected text of a wrong value).
            pub const WHAT: &'static str = $what;
            /// The JSON Schema `pattern` of the value (the same set as the check).
            pub const PATTERN: &'static str = $pattern;

            /// The value as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let check: fn(&str) -> bool = $check;
                accept_value(d, $what, |found| {
                    let s = found.as_str().filter(|s| check(s))?;
                    Some($name(s.to_owned()))
                })
            }
        }

        inline_schema!(
            $name,
            json_schema!({ "type": "string", "pattern": $pattern, "description": $what })
        );
    };
}

fn is_uid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

patterned!(
    /// A Kubernetes object UID (lowercase RFC 4122 UUID, e.g. `0b6f3c9e-2d4a-4f7e-9c1a-5e8d7b6a4c3f`).
    Uid,
    "a UID (8-4-4-4-12 lowercase hex, as in metadata.uid)",
    "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    is_uid
);

patterned!(
    /// A canonical digest: 64 lowercase hex characters (`kca-webhook-lab digest PATH`).
    Sha256Hex,
    "a canonical digest (64 lowercase hex characters, from `kca-webhook-lab digest`)",
    "^[0-9a-f]{64}$",
    crate::digest::is_digest
);

constant! {
    /// `kca-webhook-target`: the namespace inside the policy's selector.
    TargetNamespace: &'static str = "kca-webhook-target";
    /// `kca-webhook-control`: the namespace outside the policy's selector.
    ControlNamespace: &'static str = "kca-webhook-control";
}

// ---------------------------------------------------------------------------------------------
// scope.json

/// `scope.json` (every lab): the lab's namespaces and node, names and UIDs kept apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "scope.json")]
pub struct Scope {
    /// Name of the namespace inside the policy's selector.
    pub target: TargetNamespace,
    /// Name of the namespace outside it.
    pub control: ControlNamespace,
    /// The node's UID (`vm.node_uid` in `inspect`).
    pub node_uid: Uid,
    /// Real namespace name → its UID (names are keys, UIDs are values).
    pub namespaces: ScopeNamespaces,
}

/// `scope.json` `namespaces`: exactly the two lab namespaces, each mapped to its UID.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeNamespaces {
    /// UID of `kca-webhook-target`.
    #[serde(rename = "kca-webhook-target")]
    pub target: Uid,
    /// UID of `kca-webhook-control`.
    #[serde(rename = "kca-webhook-control")]
    pub control: Uid,
}

// ---------------------------------------------------------------------------------------------
// policy.json and policy-ignore.json

constant! {
    /// `policies.kyverno.io/v1`.
    PolicyApiVersion: &'static str = "policies.kyverno.io/v1";
    /// `ValidatingPolicy`.
    PolicyKind: &'static str = "ValidatingPolicy";
    /// `kca-webhook-label`: the policy's name.
    PolicyName: &'static str = "kca-webhook-label";
    /// `Deny`: the only validation action.
    DenyAction: &'static str = "Deny";
    /// failurePolicy `Fail` (`policy.json`).
    FailPolicy: &'static str = "Fail";
    /// failurePolicy `Ignore` (`policy-ignore.json`).
    IgnorePolicy: &'static str = "Ignore";
    /// `webhookConfiguration.timeoutSeconds`: how long the API server waits for the webhook call,
    /// seconds (3).
    WebhookTimeoutSec: u32 = 3;
    /// `evaluation.background.enabled`: `false` (the policy judges admission requests only).
    BackgroundDisabled: bool = false;
    /// `preserve_webhook` of the freeze plan: `true` (the registration is kept; no scale-down).
    WebhookPreserved: bool = true;
    /// `""`: the core API group.
    CoreGroup: &'static str = "";
    /// `v1`: the API version of the pods the policy matches.
    PodsApiVersion: &'static str = "v1";
    /// `CREATE`.
    CreateOperation: &'static str = "CREATE";
    /// `pods`.
    PodsResource: &'static str = "pods";
    /// The validation's CEL expression: a pod must carry the `environment` label.
    LabelExpression: &'static str = "'environment' in object.metadata.?labels.orValue({})";
    /// The validation's message, the marker of this policy's deny.
    RequiredMessage: &'static str = "KCA_ENVIRONMENT_REQUIRED";
}

/// A failurePolicy constant (`Fail` for `policy.json`, `Ignore` for `policy-ignore.json`).
pub trait FailurePolicyConst:
    Clone + PartialEq + std::fmt::Debug + Serialize + DeserializeOwned + JsonSchema
{
}
impl FailurePolicyConst for FailPolicy {}
impl FailurePolicyConst for IgnorePolicy {}

/// `policy.json` / `policy-ignore.json`: the Kyverno ValidatingPolicy, exactly as the course fixes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[serde(bound(deserialize = "F: DeserializeOwned"))]
pub struct ValidatingPolicy<F: FailurePolicyConst> {
    /// `policies.kyverno.io/v1`.
    pub api_version: PolicyApiVersion,
    /// `ValidatingPolicy`.
    pub kind: PolicyKind,
    /// Only the name.
    pub metadata: PolicyMetadata,
    /// The policy.
    pub spec: PolicySpec<F>,
}

/// `policy.json` (failurePolicy `Fail`).
pub type Policy = ValidatingPolicy<FailPolicy>;
/// `policy-ignore.json` (failurePolicy `Ignore`, all else equal to `policy.json`).
pub type PolicyIgnore = ValidatingPolicy<IgnorePolicy>;

/// `metadata` of the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyMetadata {
    /// `kca-webhook-label`.
    pub name: PolicyName,
}

/// `spec` of the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[serde(bound(deserialize = "F: DeserializeOwned"))]
pub struct PolicySpec<F: FailurePolicyConst> {
    /// `[Deny]`: what happens when the verdict is "violates".
    pub validation_actions: (DenyAction,),
    /// What happens when the webhook call fails (timeout, refused): not a verdict.
    pub failure_policy: F,
    /// `{timeoutSeconds: 3}`.
    pub webhook_configuration: WebhookConfiguration,
    /// `{background: {enabled: false}}`.
    pub evaluation: Evaluation,
    /// Which requests the policy matches.
    pub match_constraints: MatchConstraints,
    /// Exactly one validation.
    pub validations: (Validation,),
}

/// `spec.webhookConfiguration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookConfiguration {
    /// How long the API server waits for the webhook call, seconds (3).
    pub timeout_seconds: WebhookTimeoutSec,
}

/// `spec.evaluation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evaluation {
    /// Background scanning switched off.
    pub background: Background,
}

/// `spec.evaluation.background`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Background {
    /// `false`.
    pub enabled: BackgroundDisabled,
}

/// `spec.matchConstraints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MatchConstraints {
    /// Selects the namespace by its labels.
    pub namespace_selector: NamespaceSelector,
    /// Exactly one rule: CREATE of core v1 pods.
    pub resource_rules: (ResourceRule,),
}

/// `spec.matchConstraints.namespaceSelector`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// `{kubernetes.io/metadata.name: kca-webhook-target}`.
    pub match_labels: TargetMatchLabels,
}

/// `spec.matchConstraints.namespaceSelector.matchLabels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetMatchLabels {
    /// The automatic namespace label (set by the API server to the namespace's name).
    #[serde(rename = "kubernetes.io/metadata.name")]
    pub name: TargetNamespace,
}

/// One entry of `spec.matchConstraints.resourceRules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceRule {
    /// `[""]`.
    pub api_groups: (CoreGroup,),
    /// `[v1]`.
    pub api_versions: (PodsApiVersion,),
    /// `[CREATE]`.
    pub operations: (CreateOperation,),
    /// `[pods]`.
    pub resources: (PodsResource,),
}

/// One entry of `spec.validations`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// `'environment' in object.metadata.?labels.orValue({})`.
    pub expression: LabelExpression,
    /// `KCA_ENVIRONMENT_REQUIRED`.
    pub message: RequiredMessage,
}

// ---------------------------------------------------------------------------------------------
// freeze-plan.json (lab B)

constant! {
    /// `freeze-one-controller-process`.
    FreezeAction: &'static str = "freeze-one-controller-process";
    /// `resume_after_sec` of `freeze-plan.json`: the freeze's planned length, 20 (seconds).
    ResumeAfterSec: u32 = 20;
    /// `pidfd`.
    PidfdIdentity: &'static str = "pidfd";
}

/// `freeze-plan.json` (lab B, act 4): the plan the freeze of act 5 follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "freeze-plan.json")]
pub struct FreezePlan {
    /// `freeze-one-controller-process`.
    pub action: FreezeAction,
    /// The live node's UID.
    pub node_uid: Uid,
    /// The live UID of the `kyverno-admission-controller` Deployment.
    pub deployment_uid: Uid,
    /// The watchdog resumes the process after this many seconds (20).
    pub resume_after_sec: ResumeAfterSec,
    /// The process is signalled through a pidfd, never by bare PID.
    pub signal_identity: PidfdIdentity,
    /// The webhook registration is kept (no scale-down).
    pub preserve_webhook: WebhookPreserved,
    /// Canonical digest of `evidence/03.json`.
    pub evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// recovery.json (lab B)

constant! {
    /// `explicit-deny`.
    ExplicitDenyWord: &'static str = "explicit-deny";
    /// `same-uid-running`.
    SameUidRunning: &'static str = "same-uid-running";
}

/// `recovery.json` (lab B, act 7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "recovery.json")]
pub struct Recovery {
    /// The failurePolicy in force: `Ignore`.
    pub mode: IgnorePolicy,
    /// A violating request in a healthy state: `explicit-deny`.
    pub healthy_bad: ExplicitDenyWord,
    /// The act-3 pod: `same-uid-running`.
    pub existing: SameUidRunning,
    /// `facts.policy.metadata.uid` of `evidence/02.json`.
    pub policy_uid: Uid,
    /// Canonical digest of `evidence/06.json`.
    pub ignore_evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// report.json (lab B)

constant! {
    /// `matching-requests-timeout`.
    MatchingRequestsTimeout: &'static str = "matching-requests-timeout";
    /// `unvalidated-request-stored`.
    UnvalidatedRequestStored: &'static str = "unvalidated-request-stored";
    /// `outside-selector`.
    OutsideSelector: &'static str = "outside-selector";
}

/// `report.json` of lab B (act 8): the conclusions, each tied to evidence by digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "report.json (lab B)")]
pub struct ReportB {
    /// Under Fail, matching requests during the freeze: `matching-requests-timeout`.
    pub fail: MatchingRequestsTimeout,
    /// Under Ignore, a violating request during the freeze: `unvalidated-request-stored`.
    pub ignore: UnvalidatedRequestStored,
    /// Under Ignore with a healthy webhook: `explicit-deny`.
    pub healthy_ignore: ExplicitDenyWord,
    /// The control namespace's request: `outside-selector`.
    pub control: OutsideSelector,
    /// The act-3 pod: `same-uid-running`.
    pub existing: SameUidRunning,
    /// Canonical digest of `evidence/05.json`.
    pub fail_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/06.json`.
    pub ignore_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/07.json`.
    pub recovery_evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// scale-plan.json (lab A)

constant! {
    /// `scale-controller-to-zero`.
    ScaleAction: &'static str = "scale-controller-to-zero";
    /// `original_replicas` of `scale-plan.json`: the admission controller's replicas before the
    /// scale-down, 1.
    OriginalReplicas: u32 = 1;
    /// `restore_after_sec` of `scale-plan.json`: when the watcher restores the replicas, 55 (seconds
    /// after arming).
    RestoreAfterSec: u32 = 55;
}

/// `scale-plan.json` (lab A, act 4): the plan the scale-down of act 5 follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "scale-plan.json")]
pub struct ScalePlan {
    /// `scale-controller-to-zero`.
    pub action: ScaleAction,
    /// The live node's UID.
    pub node_uid: Uid,
    /// The live UID of the `kyverno-admission-controller` Deployment.
    pub deployment_uid: Uid,
    /// Replicas the watcher restores (1).
    pub original_replicas: OriginalReplicas,
    /// The watcher restores them after this many seconds (55).
    pub restore_after_sec: RestoreAfterSec,
    /// Canonical digest of `evidence/03.json`.
    pub evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// report.json (lab A)

one_of! {
    /// What happened to the policy's webhook registration after the scale-down (as evidenced).
    ScaleDownResult {
        /// The registration was removed (observed on Kyverno v1.19.1 + k3s v1.35.8).
        RegistrationAbsent = "registration-absent",
        /// The registration survived (another version may behave so).
        RegistrationKept = "registration-kept",
    }
    /// What happened to the violating request after the scale-down (as evidenced).
    ScaleRequestResult {
        /// No webhook was registered, so the request was admitted (not a failure of Fail).
        AdmittedWithoutWebhook = "admitted-without-webhook",
        /// The registration was kept and the call failed, so Fail rejected the request.
        RejectedWebhookUnreachable = "rejected-webhook-unreachable",
    }
}
constant! {
    /// `present`.
    PresentWord: &'static str = "present";
    /// `lease-then-registration-then-deny`.
    LeaseRegistrationDeny: &'static str = "lease-then-registration-then-deny";
    /// `validated-not-stored`.
    ValidatedNotStored: &'static str = "validated-not-stored";
}

/// `report.json` of lab A (act 8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "report.json (lab A)")]
pub struct ReportA {
    /// `registration-absent` or `registration-kept`, whichever `evidence/05.json` shows.
    pub scale_down: ScaleDownResult,
    /// The policy object after the scale-down: `present`.
    pub policy: PresentWord,
    /// The violating request after the scale-down: `admitted-without-webhook` (or
    /// `rejected-webhook-unreachable` where the registration was kept), as evidenced.
    pub request: ScaleRequestResult,
    /// Order of recovery: `lease-then-registration-then-deny`.
    pub recovery: LeaseRegistrationDeny,
    /// Server dry-run: `validated-not-stored`.
    pub dry_run: ValidatedNotStored,
    /// The act-3 pod: `same-uid-running`.
    pub existing: SameUidRunning,
    /// Canonical digest of `evidence/05.json`.
    pub scale_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/06.json`.
    pub recovery_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/07.json`.
    pub dry_run_evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// ha-plan.json and freeze-plan.json (lab C)

constant! {
    /// `scale-controller-to-three`.
    HaAction: &'static str = "scale-controller-to-three";
    /// `replicas` of `ha-plan.json`: the admission controller's replicas during lab C, 3.
    HaReplicas: u32 = 3;
    /// `target` of lab C's `freeze-plan.json`: the replica act 5 freezes, `leader` (the holder
    /// of the Lease `kyverno`).
    LeaderTarget: &'static str = "leader";
}

/// `ha-plan.json` (lab C, act 3): the scale to three replicas and the count to put back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ha-plan.json")]
pub struct HaPlan {
    /// `scale-controller-to-three`.
    pub action: HaAction,
    /// The live node's UID.
    pub node_uid: Uid,
    /// The live UID of the `kyverno-admission-controller` Deployment.
    pub deployment_uid: Uid,
    /// Replicas before the lab and after it (1): act 7 and `heal` put them back.
    pub original_replicas: OriginalReplicas,
    /// Replicas during the lab (3).
    pub replicas: HaReplicas,
}

/// `freeze-plan.json` of lab C (act 4): lab B's fields plus `target` (`leader`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "freeze-plan.json (lab C)")]
pub struct FreezePlanC {
    /// `freeze-one-controller-process`.
    pub action: FreezeAction,
    /// Which replica: `leader` (the Lease `kyverno`'s holder when act 5 starts).
    pub target: LeaderTarget,
    /// The live node's UID.
    pub node_uid: Uid,
    /// The live UID of the `kyverno-admission-controller` Deployment.
    pub deployment_uid: Uid,
    /// The healer resumes the process after this many seconds (20).
    pub resume_after_sec: ResumeAfterSec,
    /// The process is signalled through a pidfd, never by bare PID.
    pub signal_identity: PidfdIdentity,
    /// The webhook registration is kept (no scale-down).
    pub preserve_webhook: WebhookPreserved,
    /// Canonical digest of `evidence/03.json`.
    pub evidence_sha256: Sha256Hex,
}

/// `recovery.json` of lab C (act 7): the scale back to the original replica count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "recovery.json (lab C)")]
pub struct RecoveryC {
    /// The failurePolicy in force: `Ignore` (act 6 switched it).
    pub mode: IgnorePolicy,
    /// The replicas to put back: the original count (1).
    pub replicas: OriginalReplicas,
    /// `facts.policy.metadata.uid` of `evidence/02.json`.
    pub policy_uid: Uid,
    /// Canonical digest of `evidence/06.json`.
    pub ignore_evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// report.json (lab C)

one_of! {
    /// What the matching requests sent during the leader's freeze met (as evidenced).
    LeaderFreezeResult {
        /// Some timed out (they reached the frozen leader), the others were denied.
        SomeTimeout = "some-matching-requests-timeout",
        /// Every one timed out.
        AllTimeout = "all-matching-requests-timeout",
        /// None timed out: every one was denied by a running replica.
        NoneTimeout = "none-matching-requests-timeout",
    }
    /// What the Lease `kyverno` did during the leader's freeze (as evidenced).
    LeaseResult {
        /// Another replica became its holder before the resume.
        TakenOver = "taken-over-during-freeze",
        /// The frozen leader stayed its holder.
        Kept = "kept",
    }
    /// What the former leader's container did after the resume (as evidenced).
    FormerLeaderResult {
        /// Its restart count went up (same pod).
        Restarted = "restarted",
        /// It ran on without a restart.
        KeptRunning = "kept-running",
    }
    /// What the matching requests sent during a follower's freeze under Ignore met.
    FollowerFreezeResult {
        /// Some were stored unvalidated (failed open), the others denied.
        SomeStored = "some-unvalidated-stored",
        /// Every one was stored unvalidated.
        AllStored = "all-unvalidated-stored",
        /// None was stored: every one was denied by a running replica.
        NoneStored = "none-unvalidated-stored",
    }
}
constant! {
    /// `kept`: the registration was there during both freezes.
    KeptWord: &'static str = "kept";
}

/// `report.json` of lab C (act 8): the conclusions, each word chosen from the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "report.json (lab C)")]
pub struct ReportC {
    /// The matching requests during the leader's freeze (`evidence/05.json`).
    pub leader_freeze: LeaderFreezeResult,
    /// The Lease during the leader's freeze.
    pub lease: LeaseResult,
    /// The former leader after the resume.
    pub former_leader: FormerLeaderResult,
    /// The matching requests during a follower's freeze under Ignore (`evidence/06.json`).
    pub follower_freeze_ignore: FollowerFreezeResult,
    /// The policy's registration during both freezes: `kept`.
    pub registration: KeptWord,
    /// The act-3 pod: `same-uid-running`.
    pub existing: SameUidRunning,
    /// Canonical digest of `evidence/05.json`.
    pub leader_freeze_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/06.json`.
    pub follower_freeze_evidence_sha256: Sha256Hex,
    /// Canonical digest of `evidence/07.json`.
    pub recovery_evidence_sha256: Sha256Hex,
}

// ---------------------------------------------------------------------------------------------
// Validation.

/// A student input type, and its file.
pub trait StudentInput: Sized + Serialize + DeserializeOwned + JsonSchema {
    /// Which file this type is.
    const FILE: InputFile;
}

/// Checks each of `file`'s bound fields ([`InputFile::bound_fields`]) in `raw` against the
/// context: one issue per mismatch, naming what the value must be; a source the context does not
/// know is not checked, and a namespace the live cluster does not have is its own issue.
fn check_bound_fields(
    file: InputFile,
    raw: &serde_json::Value,
    ctx: &Context,
    issues: &mut Vec<InputIssue>,
) {
    for &(path, source) in file.bound_fields() {
        // The shape was checked before (schema, then serde): a bound field is a string.
        let Some(found) = crate::json::value_at(raw, path).and_then(|v| v.as_str()) else {
            continue;
        };
        let expected = match source {
            Source::NodeUid => ctx.node_uid.as_ref(),
            Source::NamespaceUid(ns) => match &ctx.namespaces {
                Some(live) if !live.contains_key(ns) => {
                    let expected = said::namespace_on_cluster(ns);
                    issues.push(said_issue(file, path, expected, said::none()));
                    continue;
                }
                live => live.as_ref().and_then(|m| m.get(ns)),
            },
            Source::DeploymentUid => ctx.deployment_uid.as_ref(),
            Source::PolicyUid => ctx.policy_uid.as_ref(),
            Source::Digest(act) => ctx.evidence_digests.get(&act),
        };
        if let Some(expected) = expected.filter(|e| *e != found) {
            let found = said::json(format!("{found:?}"));
            let issue = said_issue(file, path, said::bound(expected, source), found);
            let mismatch = Some(source);
            issues.push(InputIssue { mismatch, ..issue });
        }
    }
}

/// An issue worded in English only (the serde backstop).
fn issue(
    file: InputFile,
    path: &str,
    expected: impl Into<String>,
    found: impl Into<String>,
) -> InputIssue {
    InputIssue {
        file: file.file_name().to_owned(),
        json_path: path.to_owned(),
        expected: expected.into(),
        found: found.into(),
        mismatch: None,
        ja: None,
    }
}

/// An issue worded in both languages ([`said`]).
fn said_issue(file: InputFile, path: &str, expected: Words, found: Words) -> InputIssue {
    InputIssue {
        ja: Some((expected.ja, found.ja)),
        ..issue(file, path, expected.en, found.en)
    }
}

/// `policy-ignore.json` against the context's `policy.json`: the first place where they differ,
/// `spec.failurePolicy` apart (nothing when the context has no policy).
fn check_as_in_policy(raw: &serde_json::Value, ctx: &Context, issues: &mut Vec<InputIssue>) {
    let Some(policy) = &ctx.policy else { return };
    let strip = |v: &serde_json::Value| {
        let mut v = v.clone();
        if let Some(spec) = v.get_mut("spec").and_then(|s| s.as_object_mut()) {
            spec.remove("failurePolicy");
        }
        v
    };
    if let Some((path, expected, found)) = first_difference(&strip(policy), &strip(raw), "$") {
        issues.push(said_issue(
            InputFile::PolicyIgnore,
            &path,
            said::as_in_policy(&expected),
            said::json(found),
        ));
    }
}

/// Parses and validates one input of type `T` from its JSON, reporting every problem of the file
/// at once: first its shape against the file's JSON Schema ([`schema`]: members, fixed values,
/// patterns, JSON types, array lengths; every failing place, see `shape`), then against the
/// [`Context`] (`check_bound_fields`; `policy-ignore.json` also `check_as_in_policy`), one issue per
/// mismatch on the places the shape check did not already flag; what the context lacks is not
/// checked.
///
/// Errors: [`LabError::InputInvalid`] with every issue found (shape issues in schema order, then
/// context issues).
pub fn parse<T: StudentInput>(value: &serde_json::Value, ctx: &Context) -> Result<T, LabError> {
    let mut issues = shape::issues(T::FILE, &schema(T::FILE), value);
    let mut context = Vec::new();
    check_bound_fields(T::FILE, value, ctx, &mut context);
    if T::FILE == InputFile::PolicyIgnore {
        check_as_in_policy(value, ctx, &mut context);
    }
    // A place whose shape is wrong is named once, by the shape check.
    let flagged = |p: &str| {
        issues.iter().any(|i: &InputIssue| {
            let q = i.json_path.as_str();
            [(p, q), (q, p)].iter().any(|(a, b)| {
                a == b || (a.starts_with(b) && matches!(a.as_bytes()[b.len()], b'.' | b'['))
            })
        })
    };
    context.retain(|c| !flagged(&c.json_path));
    issues.extend(context);
    if !issues.is_empty() {
        return Err(issues.into());
    }
    // The schema and the types accept the same files (`shape_and_types_agree` in the unit tests);
    // should they ever differ, serde's first error is still reported (at its JSON path), never a
    // silent pass.
    serde_path_to_error::deserialize(value).map_err(|e| {
        let (path, found) = (json_path(e.path()), e.inner().to_string());
        vec![issue(T::FILE, &path, "a valid value", found)].into()
    })
}

/// The JSON Schema (draft 2020-12) of `file`, generated from the same types that validate it.
/// Unknown fields appear as `additionalProperties: false`, fixed values as `const`/`enum`.
pub fn schema(file: InputFile) -> serde_json::Value {
    let mut v = type_schema(file).to_value();
    // Every other type names its file in `#[schemars(title)]`; the generic policy type cannot, and
    // schemars titles it by its type name.
    if let InputFile::Policy | InputFile::PolicyIgnore = file {
        v["title"] = file.file_name().into();
    }
    v
}

/// `v` as JSON text, cut after 60 characters (`…`).
fn abbreviate(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// First place where `found` differs from `expected`: (JSON path, expected, found) as JSON texts.
fn first_difference(
    expected: &serde_json::Value,
    found: &serde_json::Value,
    path: &str,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (expected, found) {
        (Value::Object(e), Value::Object(f)) => e
            .iter()
            .find_map(|(k, ev)| match f.get(k) {
                Some(fv) => first_difference(ev, fv, &push_key(path, k)),
                None => Some((push_key(path, k), ev.to_string(), "nothing".to_owned())),
            })
            .or_else(|| {
                let (k, v) = f.iter().find(|(k, _)| !e.contains_key(*k))?;
                Some((push_key(path, k), "nothing".to_owned(), v.to_string()))
            }),
        (Value::Array(e), Value::Array(f)) if e.len() == f.len() => e
            .iter()
            .zip(f)
            .enumerate()
            .find_map(|(i, (ev, fv))| first_difference(ev, fv, &format!("{path}[{i}]"))),
        _ if expected == found => None,
        _ => Some((path.to_owned(), expected.to_string(), found.to_string())),
    }
}

mod shape;

#[cfg(test)]
mod tests;
