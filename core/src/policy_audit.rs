//! `kca-webhook-lab audit`'s judging of the API server's own admission policies, pure: every
//! ValidatingAdmissionPolicy and MutatingAdmissionPolicy (CEL, evaluated inside kube-apiserver:
//! no webhook, no backend to freeze) with its bindings, in the version the API server's
//! discovery serves, and the traps they hold. The reads are `lab`'s (`lab/src/audit_cmd.rs`);
//! they reach [`audit`] as a [`PolicySnapshot`].
//!
//! # Versions (`admissionregistration.k8s.io`)
//!
//! ValidatingAdmissionPolicy is `v1` since Kubernetes v1.30. MutatingAdmissionPolicy is `v1beta1`
//! in v1.34 and v1.35, behind the `MutatingAdmissionPolicy` feature gate and the
//! `admissionregistration.k8s.io/v1beta1` runtime config, both off by default, and `v1` from
//! v1.36 (kubernetes PR #136039). The reader takes, per kind, the newest version of `v1`,
//! `v1beta1`, `v1alpha1` whose discovery document lists the kind's resource; a kind no version
//! serves is said as "not served" (`served: null`), never as an empty list.
//!
//! # Findings
//!
//! - `binding-policy-missing`: a binding whose `spec.policyName` names no policy of its kind: the
//!   binding enforces nothing (the API server skips it), which reads as "protected" while it is
//!   not;
//! - `fail-params-missing`: a policy with `failurePolicy: Fail` (the default) and a `paramKind`,
//!   bound with a `paramRef` whose params are missing: the param kind is not served at all, or no
//!   object matches the `paramRef` (by name or selector, in its namespace or in any) and
//!   `parameterNotFoundAction` is `Deny` (or absent), or the binding has no `paramRef`. The
//!   binding is then misconfigured and the policy's failurePolicy applies to every request it
//!   matches: with Fail, every such request is refused (Kubernetes docs, "Validating Admission
//!   Policy", parameter resources);
//! - `audit-only-actions`: a ValidatingAdmissionPolicyBinding whose `validationActions` lack
//!   `Deny` (only `Audit` and/or `Warn`): a violating request is admitted, recorded in the audit
//!   log or returned as a warning only; a binding meant to enforce is mistaken for one that does.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The versions tried, newest first.
pub const VERSIONS: [&str; 3] = ["v1", "v1beta1", "v1alpha1"];

/// Which kind of admission policy.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// ValidatingAdmissionPolicy (and ValidatingAdmissionPolicyBinding).
    Validating,
    /// MutatingAdmissionPolicy (and MutatingAdmissionPolicyBinding).
    Mutating,
}

impl PolicyKind {
    /// The policies' resource (`validatingadmissionpolicies`).
    pub fn resource(self) -> &'static str {
        match self {
            PolicyKind::Validating => "validatingadmissionpolicies",
            PolicyKind::Mutating => "mutatingadmissionpolicies",
        }
    }
    /// The bindings' resource (`validatingadmissionpolicybindings`).
    pub fn binding_resource(self) -> &'static str {
        match self {
            PolicyKind::Validating => "validatingadmissionpolicybindings",
            PolicyKind::Mutating => "mutatingadmissionpolicybindings",
        }
    }
    /// The policy's `kind` (`ValidatingAdmissionPolicy`).
    pub fn kind_name(self) -> &'static str {
        match self {
            PolicyKind::Validating => "ValidatingAdmissionPolicy",
            PolicyKind::Mutating => "MutatingAdmissionPolicy",
        }
    }
}

/// One kind as read: the version served (`None`: not served), its policies and bindings (list
/// items, verbatim).
#[derive(Debug, Clone, Default)]
pub struct Served {
    /// The version the reader listed, e.g. `v1`; `None` when no version serves the kind.
    pub version: Option<String>,
    /// The policies (list items, verbatim).
    pub policies: Vec<Value>,
    /// The bindings (list items, verbatim).
    pub bindings: Vec<Value>,
}

/// What the reader found of a binding's params (a binding with a `paramRef` whose policy has a
/// `paramKind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Params {
    /// Discovery serves no resource of the `paramKind` (`apiVersion`, `kind`).
    KindNotServed,
    /// The objects matching the `paramRef` (its name or selector; in its namespace, else in
    /// every namespace the reader could list).
    Found {
        /// How many.
        count: u64,
    },
}

/// What the reader gathered, as the API server returned it.
#[derive(Debug, Clone, Default)]
pub struct PolicySnapshot {
    /// ValidatingAdmissionPolicies and their bindings.
    pub validating: Served,
    /// MutatingAdmissionPolicies and their bindings.
    pub mutating: Served,
    /// Params per binding, keyed by [`params_key`]; a binding absent was not looked up (no
    /// `paramRef`, or its policy has no `paramKind` or is missing).
    pub params: BTreeMap<String, Params>,
}

/// The key of a binding in [`PolicySnapshot::params`]: `validating/<binding name>`.
pub fn params_key(kind: PolicyKind, binding: &str) -> String {
    format!("{}/{binding}", kind_str(kind))
}

fn kind_str(kind: PolicyKind) -> &'static str {
    match kind {
        PolicyKind::Validating => "validating",
        PolicyKind::Mutating => "mutating",
    }
}

/// One policy, as audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyRow {
    /// `metadata.name`.
    pub name: String,
    /// `spec.failurePolicy` (`Fail` when absent).
    pub failure_policy: String,
    /// `spec.paramKind`, verbatim (`null` when absent).
    pub param_kind: Value,
    /// `spec.matchConstraints`, verbatim.
    pub match_constraints: Value,
    /// How many `validations` (validating) or `mutations` (mutating) it has.
    pub expressions: usize,
    /// The bindings naming it.
    pub bindings: Vec<String>,
}

/// One binding, as audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BindingRow {
    /// `metadata.name`.
    pub name: String,
    /// `spec.policyName`.
    pub policy_name: String,
    /// Whether a policy of that name exists.
    pub policy_found: bool,
    /// `spec.validationActions` of a validating binding; `null` for mutating ones.
    pub validation_actions: Option<Vec<String>>,
    /// `spec.paramRef`, verbatim (`null` when absent).
    pub param_ref: Value,
    /// `spec.matchResources`, verbatim.
    pub match_resources: Value,
    /// What the reader found of its params; `null` when not looked up.
    pub params: Option<Params>,
}

/// One kind's policies and bindings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KindAudit {
    /// Which kind.
    pub kind: PolicyKind,
    /// The version discovery serves it in; `null`: not served by this API server.
    pub served: Option<String>,
    /// The policies, by name.
    pub policies: Vec<PolicyRow>,
    /// The bindings, by name.
    pub bindings: Vec<BindingRow>,
}

/// A trap found on a binding.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum PolicyFindingCode {
    /// The binding names no policy of its kind.
    BindingPolicyMissing,
    /// A Fail policy with a paramKind whose params are missing for the binding.
    FailParamsMissing,
    /// `validationActions` without `Deny`.
    AuditOnlyActions,
}

impl PolicyFindingCode {
    /// The kebab-case wire name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One finding: the code, the binding and its policy, and the facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyFinding {
    /// Which trap.
    pub code: PolicyFindingCode,
    /// Validating or mutating.
    pub kind: PolicyKind,
    /// The binding's name.
    pub binding: String,
    /// The policy it names.
    pub policy: String,
    /// The facts in the API's own words (e.g. `validationActions=[Audit]`).
    pub facts: String,
}

/// Both kinds and every finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyAudit {
    /// ValidatingAdmissionPolicies.
    pub validating: KindAudit,
    /// MutatingAdmissionPolicies.
    pub mutating: KindAudit,
    /// Every finding, validating first, by binding name then code.
    pub findings: Vec<PolicyFinding>,
}

fn name(v: &Value) -> String {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn spec_str(v: &Value, key: &str) -> Option<String> {
    v.pointer(&format!("/spec/{key}"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn spec(v: &Value, key: &str) -> Value {
    v.pointer(&format!("/spec/{key}"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Judges `snapshot`: both kinds' rows and the findings. Pure.
pub fn audit(snapshot: &PolicySnapshot) -> PolicyAudit {
    let mut findings = Vec::new();
    let validating = kind_audit(
        PolicyKind::Validating,
        &snapshot.validating,
        snapshot,
        &mut findings,
    );
    let mutating = kind_audit(
        PolicyKind::Mutating,
        &snapshot.mutating,
        snapshot,
        &mut findings,
    );
    PolicyAudit {
        validating,
        mutating,
        findings,
    }
}

fn kind_audit(
    kind: PolicyKind,
    served: &Served,
    snapshot: &PolicySnapshot,
    findings: &mut Vec<PolicyFinding>,
) -> KindAudit {
    let mut policies: Vec<&Value> = served.policies.iter().collect();
    policies.sort_by_key(|p| name(p));
    let mut bindings: Vec<&Value> = served.bindings.iter().collect();
    bindings.sort_by_key(|b| name(b));
    let by_name: BTreeMap<String, &Value> = policies.iter().map(|p| (name(p), *p)).collect();
    let expressions = match kind {
        PolicyKind::Validating => "validations",
        PolicyKind::Mutating => "mutations",
    };
    let policy_rows = policies
        .iter()
        .map(|p| PolicyRow {
            name: name(p),
            failure_policy: spec_str(p, "failurePolicy").unwrap_or_else(|| "Fail".to_owned()),
            param_kind: spec(p, "paramKind"),
            match_constraints: spec(p, "matchConstraints"),
            expressions: spec(p, expressions).as_array().map_or(0, Vec::len),
            bindings: bindings
                .iter()
                .filter(|b| spec_str(b, "policyName").as_deref() == Some(name(p).as_str()))
                .map(|b| name(b))
                .collect(),
        })
        .collect();
    let binding_rows: Vec<BindingRow> = bindings
        .iter()
        .map(|b| {
            let policy_name = spec_str(b, "policyName").unwrap_or_default();
            BindingRow {
                name: name(b),
                policy_found: by_name.contains_key(&policy_name),
                policy_name,
                validation_actions: (kind == PolicyKind::Validating).then(|| {
                    spec(b, "validationActions")
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                }),
                param_ref: spec(b, "paramRef"),
                match_resources: spec(b, "matchResources"),
                params: snapshot.params.get(&params_key(kind, &name(b))).cloned(),
            }
        })
        .collect();
    for b in &binding_rows {
        findings.extend(findings_of(kind, b, by_name.get(&b.policy_name).copied()));
    }
    KindAudit {
        kind,
        served: served.version.clone(),
        policies: policy_rows,
        bindings: binding_rows,
    }
}

/// The findings of one binding (module docs), in [`PolicyFindingCode`] order; `policy` is the
/// policy it names, when it exists.
pub fn findings_of(kind: PolicyKind, b: &BindingRow, policy: Option<&Value>) -> Vec<PolicyFinding> {
    let mut out = Vec::new();
    let mut add = |code, facts: String| {
        out.push(PolicyFinding {
            code,
            kind,
            binding: b.name.clone(),
            policy: b.policy_name.clone(),
            facts,
        })
    };
    match policy {
        None => add(
            PolicyFindingCode::BindingPolicyMissing,
            format!(
                "policyName={}: no {} of that name",
                b.policy_name,
                kind.kind_name()
            ),
        ),
        Some(p) => {
            if let Some(facts) = params_missing(p, b) {
                add(PolicyFindingCode::FailParamsMissing, facts);
            }
        }
    }
    if let Some(actions) = &b.validation_actions
        && !actions.iter().any(|a| a == "Deny")
    {
        add(
            PolicyFindingCode::AuditOnlyActions,
            format!("validationActions=[{}]: no Deny", actions.join(", ")),
        );
    }
    out
}

/// The facts of `fail-params-missing` for binding `b` of policy `p`, when they hold.
fn params_missing(p: &Value, b: &BindingRow) -> Option<String> {
    let failure = spec_str(p, "failurePolicy").unwrap_or_else(|| "Fail".to_owned());
    let param_kind = spec(p, "paramKind");
    if failure != "Fail" || param_kind.is_null() {
        return None;
    }
    let kind = format!(
        "{} {}",
        param_kind
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("?"),
        param_kind
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("?")
    );
    if b.param_ref.is_null() {
        return Some(format!(
            "failurePolicy=Fail, paramKind {kind}, the binding has no paramRef"
        ));
    }
    let action = b
        .param_ref
        .get("parameterNotFoundAction")
        .and_then(Value::as_str)
        .unwrap_or("Deny");
    let target = match (
        b.param_ref.get("name").and_then(Value::as_str),
        b.param_ref.get("namespace").and_then(Value::as_str),
    ) {
        (Some(n), Some(ns)) => format!("{ns}/{n}"),
        (Some(n), None) => n.to_owned(),
        (None, _) => "selector".to_owned(),
    };
    match &b.params {
        Some(Params::KindNotServed) => Some(format!(
            "failurePolicy=Fail, paramKind {kind} is not served"
        )),
        Some(Params::Found { count: 0 }) if action == "Deny" => Some(format!(
            "failurePolicy=Fail, paramRef {target}: no {kind} found, parameterNotFoundAction={action}"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(name: &str, failure: Option<&str>, param_kind: bool) -> Value {
        let mut p = json!({"metadata": {"name": name}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }});
        if let Some(f) = failure {
            p["spec"]["failurePolicy"] = json!(f);
        }
        if param_kind {
            p["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        }
        p
    }

    fn binding(name: &str, policy: &str, actions: &[&str], param_ref: Option<Value>) -> Value {
        let mut b = json!({"metadata": {"name": name}, "spec": {"policyName": policy, "validationActions": actions}});
        if let Some(r) = param_ref {
            b["spec"]["paramRef"] = r;
        }
        b
    }

    fn codes(a: &PolicyAudit) -> Vec<(String, PolicyFindingCode)> {
        a.findings
            .iter()
            .map(|f| (f.binding.clone(), f.code))
            .collect()
    }

    #[test]
    fn a_deny_binding_of_an_existing_policy_has_no_finding() {
        let s = PolicySnapshot {
            validating: Served {
                version: Some("v1".into()),
                policies: vec![policy("max-replicas", None, false)],
                bindings: vec![binding("max-replicas", "max-replicas", &["Deny"], None)],
            },
            ..Default::default()
        };
        let a = audit(&s);
        assert_eq!(codes(&a), vec![]);
        assert_eq!(a.validating.policies[0].bindings, ["max-replicas"]);
        assert_eq!(a.validating.policies[0].failure_policy, "Fail");
        assert_eq!(
            a.mutating.served, None,
            "not served is said, not an empty version"
        );
    }

    #[test]
    fn each_trap_is_found_on_its_binding_only() {
        let mut s = PolicySnapshot::default();
        let by_name =
            json!({"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"});
        s.validating = Served {
            version: Some("v1".into()),
            policies: vec![
                policy("with-params", None, true),
                policy("ignore-params", Some("Ignore"), true),
            ],
            bindings: vec![
                binding("a-orphan", "no-such-policy", &["Deny"], None),
                binding(
                    "b-params-gone",
                    "with-params",
                    &["Deny"],
                    Some(by_name.clone()),
                ),
                binding(
                    "c-audit-only",
                    "with-params",
                    &["Audit", "Warn"],
                    Some(by_name.clone()),
                ),
                binding("d-ignore", "ignore-params", &["Deny"], Some(by_name)),
                binding("e-no-ref", "with-params", &["Deny"], None),
            ],
        };
        for b in ["b-params-gone", "d-ignore"] {
            s.params.insert(
                params_key(PolicyKind::Validating, b),
                Params::Found { count: 0 },
            );
        }
        s.params.insert(
            params_key(PolicyKind::Validating, "c-audit-only"),
            Params::Found { count: 1 },
        );
        let a = audit(&s);
        use PolicyFindingCode::*;
        assert_eq!(
            codes(&a),
            vec![
                ("a-orphan".into(), BindingPolicyMissing),
                ("b-params-gone".into(), FailParamsMissing),
                ("c-audit-only".into(), AuditOnlyActions),
                ("e-no-ref".into(), FailParamsMissing),
            ]
        );
        assert!(
            a.findings[1].facts.contains("default/limits"),
            "{:?}",
            a.findings[1]
        );
    }

    #[test]
    fn allow_on_missing_params_and_a_served_param_kind_are_not_findings() {
        let mut s = PolicySnapshot::default();
        let allow = json!({"name": "limits", "parameterNotFoundAction": "Allow"});
        s.validating = Served {
            version: Some("v1".into()),
            policies: vec![policy("p", None, true)],
            bindings: vec![
                binding("allow", "p", &["Deny"], Some(allow)),
                binding("gone-kind", "p", &["Deny"], Some(json!({"name": "x"}))),
            ],
        };
        s.params.insert(
            params_key(PolicyKind::Validating, "allow"),
            Params::Found { count: 0 },
        );
        s.params.insert(
            params_key(PolicyKind::Validating, "gone-kind"),
            Params::KindNotServed,
        );
        let a = audit(&s);
        assert_eq!(
            codes(&a),
            vec![("gone-kind".into(), PolicyFindingCode::FailParamsMissing)]
        );
        assert!(a.findings[0].facts.contains("not served"));
    }

    #[test]
    fn mutating_bindings_have_no_validation_actions() {
        let s = PolicySnapshot {
            mutating: Served {
                version: Some("v1beta1".into()),
                policies: vec![],
                bindings: vec![json!({"metadata": {"name": "m"}, "spec": {"policyName": "gone"}})],
            },
            ..Default::default()
        };
        let a = audit(&s);
        assert_eq!(a.mutating.bindings[0].validation_actions, None);
        assert_eq!(
            codes(&a),
            vec![("m".into(), PolicyFindingCode::BindingPolicyMissing)]
        );
        use strum::IntoEnumIterator;
        let names: Vec<&str> = PolicyFindingCode::iter()
            .map(PolicyFindingCode::as_str)
            .collect();
        assert_eq!(
            names,
            [
                "binding-policy-missing",
                "fail-params-missing",
                "audit-only-actions"
            ]
        );
    }
}
