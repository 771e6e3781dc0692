//! Which requests a validating webhook registration is called for, by the API server's matching
//! rules, so a grader can tell whether a recorded registration really guards the lab's pods.
//!
//! The API server calls a webhook for a request only when one of its `rules` matches the
//! request's operation, group, version, resource and scope, and its `namespaceSelector` matches
//! the labels of the request's namespace (then `objectSelector` and `matchConditions`, which the
//! graders check separately with `grade::scope_is_open`). The rule semantics are the ones
//! documented on `RuleWithOperations` in k8s.io/api `admissionregistration/v1/types.go`:
//!
//! - `operations`, `apiGroups`, `apiVersions`: a listed value, or `*` for all;
//! - `resources`: `pods` is the resource alone, `*` every resource but no subresource,
//!   `pods/*` every subresource of pods, `*/*` every resource and subresource;
//! - `scope`: `Namespaced`, `Cluster`, or `*` (the default when absent) for both.
//!
//! `namespaceSelector` is a metav1 `LabelSelector`: every `matchLabels` pair and every
//! `matchExpressions` requirement must hold (`In`: the label is present with a listed value;
//! `NotIn`: absent, or present with an unlisted value; `Exists`; `DoesNotExist`), and an empty or
//! absent selector selects every namespace (apimachinery's `LabelSelectorAsSelector` and
//! `labels.Requirement.Matches`). (kube-core has the same evaluation, but this crate stays free
//! of kube crates: `xtask/tests/tidy.rs`.) Every namespace carries the label
//! `kubernetes.io/metadata.name` with its own name (set by the API server since Kubernetes
//! 1.22); [`namespace_labels`] gives that label set.
//!
//! `matchPolicy: Equivalent` also sends requests made through an equivalent group/version of the
//! same resource; pods exist only as core `v1`, so for the lab's requests the exact rule is the
//! whole answer.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One admission request as the matching rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// API group, `""` for the core group.
    pub group: &'a str,
    /// API version, e.g. `v1`.
    pub version: &'a str,
    /// Resource (plural), e.g. `pods`.
    pub resource: &'a str,
    /// Whether the resource is namespaced.
    pub namespaced: bool,
    /// Labels of the request's namespace.
    pub namespace_labels: BTreeMap<String, String>,
}

impl Request<'static> {
    /// The lab's request: `CREATE` of a core `v1` pod in namespace `namespace` (labels:
    /// [`namespace_labels`]).
    pub fn create_pod(namespace: &str) -> Request<'static> {
        Request::pod("CREATE", namespace)
    }

    /// `operation` (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`) of a core `v1` pod in `namespace`.
    pub fn pod(operation: &'static str, namespace: &str) -> Request<'static> {
        Request {
            operation,
            group: "",
            version: "v1",
            resource: "pods",
            namespaced: true,
            namespace_labels: namespace_labels(namespace),
        }
    }
}

/// The labels every namespace has: `kubernetes.io/metadata.name` = its name (the API server sets
/// and keeps it, Kubernetes ≥ 1.22). The lab's namespaces carry no other label its policy uses.
pub fn namespace_labels(namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(
        "kubernetes.io/metadata.name".to_owned(),
        namespace.to_owned(),
    )])
}

/// Why a registration is, or is not, called for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// A rule matches and the namespaceSelector selects the namespace.
    Called,
    /// Not called; the reason names the part that does not match.
    NotCalled(String),
    /// The registration cannot be read (e.g. an unknown selector operator); the reason says where.
    Unreadable(String),
}

/// Whether a webhook with `rules` (the registration's `rules` array, verbatim) and
/// `namespace_selector` (its `namespaceSelector`, verbatim; `null` or `{}` selects every
/// namespace) is called for `req`. Pure; see the module docs for the rules followed.
pub fn webhook_match(rules: &Value, namespace_selector: &Value, req: &Request<'_>) -> Match {
    let Some(rules) = rules.as_array() else {
        return Match::Unreadable(format!("rules is not an array: {rules}"));
    };
    if !rules.iter().any(|r| rule_matches(r, req)) {
        return Match::NotCalled(format!(
            "no rule matches {} of {}/{} {} ({})",
            req.operation,
            if req.group.is_empty() {
                "core"
            } else {
                req.group
            },
            req.version,
            req.resource,
            if req.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        ));
    }
    // A cluster-scoped object other than a Namespace is never exempted by the namespaceSelector
    // (apiserver `predicates/namespace/matcher.go`, `MatchNamespaceSelector`).
    if !req.namespaced && req.resource != "namespaces" {
        return Match::Called;
    }
    match selects(namespace_selector, &req.namespace_labels) {
        Err(e) => Match::Unreadable(format!("namespaceSelector: {e}")),
        Ok(true) => Match::Called,
        Ok(false) => Match::NotCalled(format!(
            "namespaceSelector {namespace_selector} does not select a namespace labelled {:?}",
            req.namespace_labels
        )),
    }
}

/// metav1 `LabelSelector`, as stored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LabelSelector {
    #[serde(default)]
    match_labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    match_expressions: Option<Vec<Requirement>>,
}

/// One `matchExpressions` entry.
#[derive(Deserialize)]
struct Requirement {
    key: String,
    operator: String,
    #[serde(default)]
    values: Option<Vec<String>>,
}

/// Whether `selector` (a metav1 LabelSelector verbatim; `null` or `{}` selects everything)
/// selects `labels`; an unknown operator or a malformed selector is an error naming it.
pub fn selects(selector: &Value, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    if selector.is_null() {
        return Ok(true);
    }
    let s: LabelSelector = serde_json::from_value(selector.clone()).map_err(|e| e.to_string())?;
    let pairs = s.match_labels.unwrap_or_default();
    let mut ok = pairs.iter().all(|(k, v)| labels.get(k) == Some(v));
    for r in s.match_expressions.unwrap_or_default() {
        let values = r.values.unwrap_or_default();
        let value = labels.get(&r.key);
        ok &= match r.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => return Err(format!("unknown operator {other:?} for key {:?}", r.key)),
        };
    }
    Ok(ok)
}

/// One `RuleWithOperations` against `req` (module docs).
fn rule_matches(rule: &Value, req: &Request<'_>) -> bool {
    let listed = |key: &str, want: &str| {
        rule.get(key)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x == "*" || x == want))
    };
    let resource = rule
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter().filter_map(Value::as_str).any(|r| {
                // The request is for the resource itself (no subresource).
                r == req.resource || r == "*" || r == "*/*"
            })
        });
    let scope = match rule.get("scope").and_then(Value::as_str) {
        None | Some("*") => true,
        Some("Namespaced") => req.namespaced,
        Some("Cluster") => !req.namespaced,
        Some(_) => false,
    };
    listed("operations", req.operation)
        && listed("apiGroups", req.group)
        && listed("apiVersions", req.version)
        && resource
        && scope
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The pod rule and namespaceSelector Kyverno 1.19.1 registered for the lab's policy (the
    /// recorded run `b-20261129T153816Z`, act 2).
    fn kyverno_rules() -> Value {
        json!([
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"},
            {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"], "scope": "*"}
        ])
    }
    fn kyverno_selector() -> Value {
        json!({
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kyverno"]}
            ],
            "matchLabels": {"kubernetes.io/metadata.name": "kca-webhook-target"}
        })
    }
    fn target() -> Request<'static> {
        Request::create_pod("kca-webhook-target")
    }

    #[test]
    fn the_recorded_registration_guards_the_target_and_not_the_control_namespace() {
        assert_eq!(
            webhook_match(&kyverno_rules(), &kyverno_selector(), &target()),
            Match::Called
        );
        assert!(matches!(
            webhook_match(
                &kyverno_rules(),
                &kyverno_selector(),
                &Request::create_pod("kca-webhook-control")
            ),
            Match::NotCalled(_)
        ));
    }

    #[test]
    fn a_selector_that_excludes_the_target_is_not_called() {
        let mut sel = kyverno_selector();
        sel["matchExpressions"].as_array_mut().unwrap().push(json!(
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kca-webhook-target"]}
        ));
        let m = webhook_match(&kyverno_rules(), &sel, &target());
        assert!(
            matches!(&m, Match::NotCalled(why) if why.contains("namespaceSelector")),
            "{m:?}"
        );
        // A label the lab's namespaces do not carry.
        let sel = json!({"matchExpressions": [{"key": "team", "operator": "Exists"}]});
        assert!(matches!(
            webhook_match(&kyverno_rules(), &sel, &target()),
            Match::NotCalled(_)
        ));
        // NotIn and DoesNotExist hold for a label the namespace does not have; In does not.
        for (op, called) in [("NotIn", true), ("DoesNotExist", true), ("In", false)] {
            let sel =
                json!({"matchExpressions": [{"key": "team", "operator": op, "values": ["x"]}]});
            assert_eq!(
                webhook_match(&kyverno_rules(), &sel, &target()) == Match::Called,
                called,
                "{op}"
            );
        }
        // Empty and absent selectors select every namespace.
        for sel in [json!({}), Value::Null] {
            assert_eq!(
                webhook_match(&kyverno_rules(), &sel, &target()),
                Match::Called
            );
        }
    }

    #[test]
    fn rules_follow_the_api_servers_wildcards_and_scope() {
        let pod_rule = |patch: Value| {
            let mut r = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"});
            for (k, v) in patch.as_object().unwrap() {
                if v.is_null() {
                    r.as_object_mut().unwrap().remove(k);
                } else {
                    r[k] = v.clone();
                }
            }
            webhook_match(&json!([r]), &Value::Null, &target())
        };
        let called = [
            json!({}),
            json!({"scope": null}),
            json!({"scope": "Namespaced"}),
            json!({"operations": ["*"]}),
            json!({"operations": ["UPDATE", "CREATE"]}),
            json!({"apiGroups": ["*"]}),
            json!({"apiVersions": ["*"]}),
            json!({"resources": ["*"]}),
            json!({"resources": ["*/*"]}),
        ];
        for p in called {
            assert_eq!(pod_rule(p.clone()), Match::Called, "{p}");
        }
        let not_called = [
            json!({"scope": "Cluster"}),
            json!({"operations": ["UPDATE"]}),
            json!({"apiGroups": ["apps"]}),
            json!({"apiVersions": ["v2"]}),
            json!({"resources": ["pods/status"]}),
            json!({"resources": ["pods/*"]}),
            json!({"resources": ["deployments"]}),
            json!({"operations": null}),
        ];
        for p in not_called {
            assert!(matches!(pod_rule(p.clone()), Match::NotCalled(_)), "{p}");
        }
        assert!(matches!(
            webhook_match(&json!([]), &Value::Null, &target()),
            Match::NotCalled(_)
        ));
    }

    #[test]
    fn the_namespace_selector_never_exempts_a_cluster_scoped_object() {
        let nodes = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"]}]);
        let node = Request {
            operation: "CREATE",
            group: "",
            version: "v1",
            resource: "nodes",
            namespaced: false,
            namespace_labels: BTreeMap::new(),
        };
        assert_eq!(
            webhook_match(&nodes, &kyverno_selector(), &node),
            Match::Called
        );
        // A Namespace object is matched against its own labels.
        let ns_rule = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["namespaces"]}]);
        let ns = Request {
            resource: "namespaces",
            namespace_labels: namespace_labels("other"),
            ..node
        };
        assert!(matches!(
            webhook_match(&ns_rule, &kyverno_selector(), &ns),
            Match::NotCalled(_)
        ));
    }

    #[test]
    fn an_unreadable_registration_says_so() {
        let sel = json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]});
        assert!(matches!(
            webhook_match(&kyverno_rules(), &sel, &target()),
            Match::Unreadable(_)
        ));
        assert!(matches!(
            webhook_match(&json!({"rules": 1}), &Value::Null, &target()),
            Match::Unreadable(_)
        ));
    }
}
