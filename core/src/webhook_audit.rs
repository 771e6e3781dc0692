//! `kca-webhook-lab audit`'s judging, pure: what every admission webhook registration of a
//! cluster would do to a request right now, and the traps the labs teach. The reads (the
//! ValidatingWebhookConfigurations, MutatingWebhookConfigurations, Namespaces and the
//! EndpointSlices of each webhook's Service) are `lab`'s (`lab/src/audit_cmd.rs`); they reach
//! [`audit`] as a [`Snapshot`] of the objects as the API server returned them.
//!
//! # Facts each row holds (Kubernetes `admissionregistration.k8s.io/v1`)
//!
//! - `failurePolicy` (default `Fail`), `timeoutSeconds` (default 10), `sideEffects`,
//!   `namespaceSelector`, `objectSelector`, `matchConditions`, `rules`, `reinvocationPolicy`
//!   (mutating; default `Never`), verbatim;
//! - the Service behind `clientConfig.service` and how many of its endpoints are ready now: an
//!   endpoint of an EndpointSlice (label `kubernetes.io/service-name`) whose `conditions.ready` is
//!   not `false` (the field's doc: unknown is read as ready), counted once per address;
//! - what it intercepts among the requests that decide whether a cluster can restart (kyverno#16177:
//!   a Fail webhook on Nodes or CertificateSigningRequests deadlocks a restarted cluster):
//!   `CREATE`/`UPDATE` of `nodes` and of `certificates.k8s.io` `certificatesigningrequests`
//!   (cluster scoped: no namespaceSelector exempts them), `CREATE`/`UPDATE` of
//!   `coordination.k8s.io` `leases` in `kube-node-lease` or `kube-system` (node heartbeats,
//!   leader election), and any namespaced request in `kube-system` — by the rules and the
//!   namespaceSelector ([`crate::admission::webhook_match`]); an objectSelector or
//!   matchConditions may still spare some objects, so "intercepts" means "is called for some".
//! - the worst-case time a matching request waits for webhooks (`WebhookRow::worst_wait`): over the
//!   requests this webhook's rules name, in every namespace there is now (or cluster scoped),
//!   the chain of every webhook called for the same request. The API server calls mutating
//!   webhooks one after another and validating webhooks in parallel
//!   (k8s.io/apiserver `admission/plugin/webhook/mutating/dispatcher.go`, `validating/dispatcher.go`),
//!   so the wait is the sum of the mutating timeouts (twice for `reinvocationPolicy: IfNeeded`, which
//!   may be called again once) plus the longest validating timeout.
//!
//! # Findings (the labs' traps)
//!
//! - `fail-no-ready-endpoints`: failurePolicy Fail and no ready endpoint behind its Service:
//!   every request it is called for is refused now (lab A's scale-to-0, before Kyverno deletes
//!   its registration);
//! - `ignore-long-timeout`: failurePolicy Ignore with `timeoutSeconds` above
//!   [`IGNORE_TIMEOUT_LIMIT_SECONDS`]: while the webhook hangs, every request waits that long and is
//!   then admitted unchecked (lab B act 6; gardener PR#3413 flags the same limit);
//! - `opt-out-object-selector`: an objectSelector with a `NotIn` or `DoesNotExist` requirement:
//!   whoever creates an object can label it out of the webhook;
//! - `fail-on-bootstrap-resources`: failurePolicy Fail on Nodes, CSRs or Leases (above).
//!
//! The API server's own admission policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy
//! and their bindings) are judged by [`crate::policy_audit`] and reported beside the webhooks
//! ([`AuditReport::admission_policies`]).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::admission::{Match, Request, namespace_labels, selects, webhook_match};

/// An Ignore webhook whose `timeoutSeconds` is above this is flagged (gardener PR#3413).
pub const IGNORE_TIMEOUT_LIMIT_SECONDS: u64 = 15;

/// `timeoutSeconds` when the registration leaves it out (`admissionregistration.k8s.io/v1`).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// What the reader gathered, as the API server returned it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// ValidatingWebhookConfiguration objects (list items, verbatim).
    pub validating: Vec<Value>,
    /// MutatingWebhookConfiguration objects (list items, verbatim).
    pub mutating: Vec<Value>,
    /// Every Namespace: name → labels.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// EndpointSlices (list items, verbatim) of each Service a webhook names, keyed
    /// `namespace/name`; a Service absent from the map was not read.
    pub endpoint_slices: BTreeMap<String, Vec<Value>>,
    /// The admission policies and bindings, in the version discovery serves.
    pub policies: crate::policy_audit::PolicySnapshot,
}

/// `validating` or `mutating`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A ValidatingWebhookConfiguration's webhook.
    Validating,
    /// A MutatingWebhookConfiguration's webhook.
    Mutating,
}

/// Where the webhook is called and how ready that is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Backend {
    /// `clientConfig.service`.
    Service {
        /// Service namespace.
        namespace: String,
        /// Service name.
        name: String,
        /// Port (default 443).
        port: i64,
        /// URL path, when set.
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// Ready endpoints now (see the module docs); `None` when the EndpointSlices were not
        /// read.
        ready_endpoints: Option<u64>,
    },
    /// `clientConfig.url`: outside the cluster's Services; readiness unknown.
    Url {
        /// The URL.
        url: String,
    },
    /// Neither (not a valid registration).
    Unknown,
}

/// Whether the webhook is called for the requests a cluster needs to restart (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Intercepts {
    /// Some namespaced request in `kube-system`.
    pub kube_system: bool,
    /// `CREATE`/`UPDATE` of Nodes.
    pub nodes: bool,
    /// `CREATE`/`UPDATE` of Leases in `kube-node-lease` or `kube-system`.
    pub leases: bool,
    /// `CREATE`/`UPDATE` of CertificateSigningRequests.
    pub csrs: bool,
}

impl Intercepts {
    /// Nodes, Leases or CSRs.
    pub fn bootstrap(&self) -> bool {
        self.nodes || self.leases || self.csrs
    }
}

/// The longest wait of a request this webhook is called for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorstWait {
    /// Seconds: the mutating timeouts summed (IfNeeded twice) plus the longest validating one.
    pub seconds: u64,
    /// The request it is reached for, e.g. `CREATE pods in kube-system`.
    pub request: String,
    /// The webhooks of that chain, `configuration/webhook`, mutating first.
    pub chain: Vec<String>,
}

/// One webhook of one configuration, as audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebhookRow {
    /// Validating or mutating.
    pub kind: Kind,
    /// The configuration's `metadata.name`.
    pub configuration: String,
    /// The webhook's `name`.
    pub webhook: String,
    /// `failurePolicy` (`Fail` when absent).
    pub failure_policy: String,
    /// `timeoutSeconds` (10 when absent).
    pub timeout_seconds: u64,
    /// `sideEffects`, verbatim (`null` when absent).
    pub side_effects: Option<String>,
    /// `reinvocationPolicy` of a mutating webhook (`Never` when absent); `null` for validating.
    pub reinvocation_policy: Option<String>,
    /// `namespaceSelector`, verbatim (`null` when absent).
    pub namespace_selector: Value,
    /// `objectSelector`, verbatim.
    pub object_selector: Value,
    /// `matchConditions`, verbatim.
    pub match_conditions: Value,
    /// `rules`, verbatim.
    pub rules: Value,
    /// Where it is called and its ready endpoints now.
    pub backend: Backend,
    /// What it intercepts among the restart-critical requests.
    pub intercepts: Intercepts,
    /// The worst-case wait of a request it is called for; `None` when it is called for none of
    /// the requests its rules name in the namespaces there are now.
    pub worst_wait: Option<WorstWait>,
}

/// A trap the labs teach, found on a registration.
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
pub enum FindingCode {
    /// failurePolicy Fail and no ready endpoint behind its Service.
    FailNoReadyEndpoints,
    /// failurePolicy Ignore and a timeout above [`IGNORE_TIMEOUT_LIMIT_SECONDS`].
    IgnoreLongTimeout,
    /// An objectSelector objects can opt out of (`NotIn`, `DoesNotExist`).
    OptOutObjectSelector,
    /// failurePolicy Fail on Nodes, CSRs or Leases.
    FailOnBootstrapResources,
}

impl FindingCode {
    /// The kebab-case wire name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One finding: the code, the webhook, and the facts it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuditFinding {
    /// Which trap.
    pub code: FindingCode,
    /// Validating or mutating.
    pub kind: Kind,
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name.
    pub webhook: String,
    /// The facts, in the registration's and the API's own words (e.g. `timeoutSeconds=30`,
    /// `Service kyverno/kyverno-svc: 0 ready endpoints`, `objectSelector NotIn key`).
    pub facts: String,
}

/// `kca-webhook-lab audit -o json|yaml`: every webhook and every finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditReport {
    /// The format: `kca-webhook-lab/audit/v1`.
    pub format: String,
    /// Every webhook of every configuration, mutating first, each by configuration then position.
    pub webhooks: Vec<WebhookRow>,
    /// Every finding, in the order of `webhooks`.
    pub findings: Vec<AuditFinding>,
    /// The API server's own admission policies and their bindings, and their findings.
    pub admission_policies: crate::policy_audit::PolicyAudit,
}

impl AuditReport {
    /// Whether anything was found, on a webhook or on an admission policy binding.
    pub fn has_findings(&self) -> bool {
        !self.findings.is_empty() || !self.admission_policies.findings.is_empty()
    }
}

/// The format name of [`AuditReport`].
pub const FORMAT: &str = "kca-webhook-lab/audit/v1";

/// The JSON Schema of `audit -o json` ([`AuditReport`]).
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(AuditReport)).unwrap_or(Value::Null)
}

/// One webhook as read from its configuration, before judging.
struct Hook<'a> {
    kind: Kind,
    configuration: String,
    raw: &'a Value,
}

impl Hook<'_> {
    fn name(&self) -> String {
        str_at(self.raw, "name").unwrap_or_default()
    }
    fn failure_policy(&self) -> String {
        str_at(self.raw, "failurePolicy").unwrap_or_else(|| "Fail".to_owned())
    }
    fn timeout(&self) -> u64 {
        self.raw
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }
    fn reinvoked(&self) -> bool {
        self.kind == Kind::Mutating
            && str_at(self.raw, "reinvocationPolicy").as_deref() == Some("IfNeeded")
    }
    fn rules(&self) -> Value {
        self.raw
            .get("rules")
            .cloned()
            .unwrap_or(Value::Array(vec![]))
    }
    fn namespace_selector(&self) -> Value {
        self.raw
            .get("namespaceSelector")
            .cloned()
            .unwrap_or(Value::Null)
    }
    fn label(&self) -> String {
        format!("{}/{}", self.configuration, self.name())
    }
}

fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Judges `snapshot`: one row per webhook, and the findings. Pure.
pub fn audit(snapshot: &Snapshot) -> AuditReport {
    let hooks = hooks(snapshot);
    let mut webhooks = Vec::new();
    let mut findings = Vec::new();
    for h in &hooks {
        let row = row(h, &hooks, snapshot);
        findings.extend(findings_of(&row));
        webhooks.push(row);
    }
    AuditReport {
        format: FORMAT.to_owned(),
        webhooks,
        findings,
        admission_policies: crate::policy_audit::audit(&snapshot.policies),
    }
}

/// Every webhook of every configuration: mutating first (the order the API server calls them
/// in), configurations by name, webhooks in their configuration's order.
fn hooks(snapshot: &Snapshot) -> Vec<Hook<'_>> {
    let mut out = Vec::new();
    for (kind, configs) in [
        (Kind::Mutating, &snapshot.mutating),
        (Kind::Validating, &snapshot.validating),
    ] {
        let mut configs: Vec<&Value> = configs.iter().collect();
        configs.sort_by_key(|c| c.pointer("/metadata/name").and_then(Value::as_str));
        for c in configs {
            let configuration = c
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            for raw in c
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Hook {
                    kind,
                    configuration: configuration.clone(),
                    raw,
                });
            }
        }
    }
    out
}

fn row(h: &Hook<'_>, all: &[Hook<'_>], snapshot: &Snapshot) -> WebhookRow {
    let field = |k: &str| h.raw.get(k).cloned().unwrap_or(Value::Null);
    WebhookRow {
        kind: h.kind,
        configuration: h.configuration.clone(),
        webhook: h.name(),
        failure_policy: h.failure_policy(),
        timeout_seconds: h.timeout(),
        side_effects: str_at(h.raw, "sideEffects"),
        reinvocation_policy: (h.kind == Kind::Mutating)
            .then(|| str_at(h.raw, "reinvocationPolicy").unwrap_or_else(|| "Never".to_owned())),
        namespace_selector: field("namespaceSelector"),
        object_selector: field("objectSelector"),
        match_conditions: field("matchConditions"),
        rules: h.rules(),
        backend: backend(h.raw, &snapshot.endpoint_slices),
        intercepts: intercepts(h, &snapshot.namespaces),
        worst_wait: worst_wait(h, all, &snapshot.namespaces),
    }
}

/// The webhook's `clientConfig` and, for a Service, its ready endpoints in `slices`.
fn backend(raw: &Value, slices: &BTreeMap<String, Vec<Value>>) -> Backend {
    let cc = raw.get("clientConfig").cloned().unwrap_or(Value::Null);
    if let Some(svc) = cc.get("service") {
        let namespace = str_at(svc, "namespace").unwrap_or_default();
        let name = str_at(svc, "name").unwrap_or_default();
        let key = format!("{namespace}/{name}");
        Backend::Service {
            ready_endpoints: slices.get(&key).map(|s| ready_endpoints(s)),
            port: svc.get("port").and_then(Value::as_i64).unwrap_or(443),
            path: str_at(svc, "path"),
            namespace,
            name,
        }
    } else if let Some(url) = str_at(&cc, "url") {
        Backend::Url { url }
    } else {
        Backend::Unknown
    }
}

/// Distinct addresses of endpoints not marked `ready: false` (EndpointSlice v1: a missing
/// `ready` is unknown, read as ready).
pub fn ready_endpoints(slices: &[Value]) -> u64 {
    let mut addresses = std::collections::BTreeSet::new();
    for s in slices {
        for e in s
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ready = e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false);
            if ready {
                for a in e
                    .get("addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(a) = a.as_str() {
                        addresses.insert(a.to_owned());
                    }
                }
            }
        }
    }
    addresses.len() as u64
}

/// The labels of namespace `name` in the snapshot, else the label every namespace has.
fn labels_of(
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
    name: &str,
) -> BTreeMap<String, String> {
    namespaces
        .get(name)
        .cloned()
        .unwrap_or_else(|| namespace_labels(name))
}

fn called(h: &Hook<'_>, req: &Request<'_>) -> bool {
    webhook_match(&h.rules(), &h.namespace_selector(), req) == Match::Called
}

/// The restart-critical requests `h` is called for (module docs).
fn intercepts(h: &Hook<'_>, namespaces: &BTreeMap<String, BTreeMap<String, String>>) -> Intercepts {
    let ops = ["CREATE", "UPDATE"];
    let cluster = |group: &'static str, resource: &'static str| {
        ops.iter().any(|op| {
            called(
                h,
                &Request {
                    operation: op,
                    group,
                    version: "v1",
                    resource,
                    namespaced: false,
                    namespace_labels: BTreeMap::new(),
                },
            )
        })
    };
    let leases = ["kube-node-lease", "kube-system"].iter().any(|ns| {
        ops.iter().any(|op| {
            called(
                h,
                &Request {
                    operation: op,
                    group: "coordination.k8s.io",
                    version: "v1",
                    resource: "leases",
                    namespaced: true,
                    namespace_labels: labels_of(namespaces, ns),
                },
            )
        })
    });
    let kube_system = selects(
        &h.namespace_selector(),
        &labels_of(namespaces, "kube-system"),
    )
    .unwrap_or(true)
        && rule_tuples(&h.rules()).iter().any(|t| t.namespaced);
    Intercepts {
        kube_system,
        nodes: cluster("", "nodes"),
        leases,
        csrs: cluster("certificates.k8s.io", "certificatesigningrequests"),
    }
}

/// One (operation, group, version, resource) a rule names, `*` kept, with the scopes it allows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tuple {
    operation: String,
    group: String,
    version: String,
    resource: String,
    namespaced: bool,
    cluster: bool,
}

/// Built-in resources that are cluster scoped (Kubernetes v1.35's API, and Kyverno's cluster-wide
/// policy kinds). A rule's `scope: "*"` names a resource in its own scope only: a listed resource
/// here is taken as cluster scoped, any other named resource as namespaced, and `*` as both
/// (the audit reads no API discovery).
pub const CLUSTER_SCOPED: &[&str] = &[
    "nodes",
    "namespaces",
    "persistentvolumes",
    "certificatesigningrequests",
    "clusterroles",
    "clusterrolebindings",
    "customresourcedefinitions",
    "apiservices",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
    "storageclasses",
    "csidrivers",
    "csinodes",
    "volumeattachments",
    "priorityclasses",
    "runtimeclasses",
    "ingressclasses",
    "flowschemas",
    "prioritylevelconfigurations",
    "ipaddresses",
    "servicecidrs",
    "deviceclasses",
    "clusterpolicies",
    "clustercleanuppolicies",
    "validatingpolicies",
    "mutatingpolicies",
    "generatingpolicies",
    "imagevalidatingpolicies",
    "clusterpolicyreports",
];

/// (namespaced, cluster) scopes a rule of `scope` allows for `resource`.
fn scopes(scope: &str, resource: &str) -> (bool, bool) {
    let base = resource.split('/').next().unwrap_or(resource);
    let (n, c) = match (scope, base) {
        ("Namespaced", _) => (true, false),
        ("Cluster", _) => (false, true),
        (_, "*") => (true, true),
        (_, r) if CLUSTER_SCOPED.contains(&r) => (false, true),
        _ => (true, false),
    };
    (n, c)
}

/// Every tuple the `rules` array names (the product of each rule's lists).
fn rule_tuples(rules: &Value) -> Vec<Tuple> {
    let list = |r: &Value, k: &str| -> Vec<String> {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for r in rules.as_array().into_iter().flatten() {
        let scope = r.get("scope").and_then(Value::as_str).unwrap_or("*");
        for operation in list(r, "operations") {
            for group in list(r, "apiGroups") {
                for version in list(r, "apiVersions") {
                    for resource in list(r, "resources") {
                        let (namespaced, cluster) = scopes(scope, &resource);
                        out.push(Tuple {
                            operation: operation.clone(),
                            group: group.clone(),
                            version: version.clone(),
                            resource,
                            namespaced,
                            cluster,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Whether two listed values can name the same request (`*` names any).
fn overlap(a: &str, b: &str) -> bool {
    a == "*" || b == "*" || a == b
}

/// Whether two `resources` entries can name the same request: `*` every resource without
/// subresource, `*/*` everything, `r/*` every subresource of `r`.
fn resources_overlap(a: &str, b: &str) -> bool {
    let split = |s: &str| {
        let mut p = s.splitn(2, '/');
        (
            p.next().unwrap_or("").to_owned(),
            p.next().map(str::to_owned),
        )
    };
    let ((ar, asub), (br, bsub)) = (split(a), split(b));
    let res = overlap(&ar, &br);
    let sub = match (asub.as_deref(), bsub.as_deref()) {
        (None, None) => true,
        (Some(x), Some(y)) => overlap(x, y),
        _ => false,
    };
    res && sub
}

/// Whether `hook`'s rules can name a request of `t` in the given scope.
fn rules_overlap(hook_rules: &Value, t: &Tuple, namespaced: bool) -> bool {
    rule_tuples(hook_rules).iter().any(|u| {
        overlap(&u.operation, &t.operation)
            && overlap(&u.group, &t.group)
            && overlap(&u.version, &t.version)
            && resources_overlap(&u.resource, &t.resource)
            && if namespaced { u.namespaced } else { u.cluster }
    })
}

/// Whether `hook`'s namespaceSelector lets it be called in `namespace` (`None`: cluster scoped,
/// never exempted). An unreadable selector counts as selecting (worst case).
fn selector_allows(hook: &Hook<'_>, labels: Option<&BTreeMap<String, String>>) -> bool {
    match labels {
        None => true,
        Some(l) => selects(&hook.namespace_selector(), l).unwrap_or(true),
    }
}

/// The worst-case wait of a request `h` is called for (module docs): over each tuple of its
/// rules, in each namespace there is now (namespaced) or cluster scoped, the chain of webhooks
/// whose rules overlap it and whose namespaceSelector selects the namespace. objectSelector and
/// matchConditions are taken to match (worst case).
fn worst_wait(
    h: &Hook<'_>,
    all: &[Hook<'_>],
    namespaces: &BTreeMap<String, BTreeMap<String, String>>,
) -> Option<WorstWait> {
    let mut best: Option<WorstWait> = None;
    for t in rule_tuples(&h.rules()) {
        let mut places: Vec<(String, Option<&BTreeMap<String, String>>)> = Vec::new();
        if t.namespaced {
            places.extend(namespaces.iter().map(|(n, l)| (format!("in {n}"), Some(l))));
        }
        if t.cluster {
            places.push(("(cluster scoped)".to_owned(), None));
        }
        for (place, labels) in places {
            if !selector_allows(h, labels) {
                continue;
            }
            let namespaced = labels.is_some();
            let chain: Vec<&Hook<'_>> = all
                .iter()
                .filter(|o| rules_overlap(&o.rules(), &t, namespaced) && selector_allows(o, labels))
                .collect();
            let mutating: u64 = chain
                .iter()
                .filter(|o| o.kind == Kind::Mutating)
                .map(|o| o.timeout() * if o.reinvoked() { 2 } else { 1 })
                .sum();
            let validating = chain
                .iter()
                .filter(|o| o.kind == Kind::Validating)
                .map(|o| o.timeout())
                .max()
                .unwrap_or(0);
            let seconds = mutating + validating;
            if best.as_ref().is_none_or(|b| seconds > b.seconds) {
                best = Some(WorstWait {
                    seconds,
                    request: format!(
                        "{} {}{}/{} {place}",
                        t.operation,
                        if t.group.is_empty() {
                            String::new()
                        } else {
                            format!("{}/", t.group)
                        },
                        t.version,
                        t.resource
                    ),
                    chain: chain.iter().map(|o| o.label()).collect(),
                });
            }
        }
    }
    best
}

/// The findings of one row (module docs), in [`FindingCode`] order.
pub fn findings_of(row: &WebhookRow) -> Vec<AuditFinding> {
    let mut out = Vec::new();
    let mut add = |code, facts: String| {
        out.push(AuditFinding {
            code,
            kind: row.kind,
            configuration: row.configuration.clone(),
            webhook: row.webhook.clone(),
            facts,
        })
    };
    let fail = row.failure_policy == "Fail";
    if let Backend::Service {
        namespace,
        name,
        ready_endpoints: Some(0),
        ..
    } = &row.backend
        && fail
    {
        add(
            FindingCode::FailNoReadyEndpoints,
            format!("failurePolicy=Fail, Service {namespace}/{name}: 0 ready endpoints"),
        );
    }
    if row.failure_policy == "Ignore" && row.timeout_seconds > IGNORE_TIMEOUT_LIMIT_SECONDS {
        add(
            FindingCode::IgnoreLongTimeout,
            format!(
                "failurePolicy=Ignore, timeoutSeconds={} (> {IGNORE_TIMEOUT_LIMIT_SECONDS})",
                row.timeout_seconds
            ),
        );
    }
    let opt_outs = opt_outs(&row.object_selector);
    if !opt_outs.is_empty() {
        add(
            FindingCode::OptOutObjectSelector,
            format!("objectSelector {}", opt_outs.join(", ")),
        );
    }
    if fail && row.intercepts.bootstrap() {
        let i = row.intercepts;
        let what: Vec<&str> = [
            (i.nodes, "nodes"),
            (i.leases, "leases"),
            (i.csrs, "certificatesigningrequests"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, w)| *w)
        .collect();
        add(
            FindingCode::FailOnBootstrapResources,
            format!("failurePolicy=Fail on {}", what.join(", ")),
        );
    }
    out
}

/// The objectSelector requirements an object opts out of by its own labels: `key NotIn [v…]`,
/// `key DoesNotExist`.
fn opt_outs(selector: &Value) -> Vec<String> {
    selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let key = str_at(r, "key")?;
            match str_at(r, "operator")?.as_str() {
                "NotIn" => Some(format!(
                    "{key} NotIn {}",
                    r.get("values").unwrap_or(&Value::Null)
                )),
                "DoesNotExist" => Some(format!("{key} DoesNotExist")),
                _ => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The lab's registration as Kyverno 1.19.1 made it (recorded run `b-20261130T210502Z`,
    /// act 2's `facts.webhook`), the pod rule only.
    fn lab_webhook() -> Value {
        json!({
            "name": "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label",
            "failurePolicy": "Fail", "timeoutSeconds": 3, "sideEffects": "NoneOnDryRun",
            "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc", "path": "/vpol/kca-webhook-label", "port": 443}},
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]},
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kyverno"]}
                ],
                "matchLabels": {"kubernetes.io/metadata.name": "kca-webhook-target"}
            },
            "objectSelector": {},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}]
        })
    }

    fn config(name: &str, webhooks: Vec<Value>) -> Value {
        json!({"metadata": {"name": name}, "webhooks": webhooks})
    }

    fn ready_slice(ready: &[bool]) -> Value {
        let eps: Vec<Value> = ready
            .iter()
            .enumerate()
            .map(|(i, r)| json!({"addresses": [format!("10.0.0.{i}")], "conditions": {"ready": r}}))
            .collect();
        json!({"endpoints": eps})
    }

    fn snapshot(validating: Vec<Value>, mutating: Vec<Value>, ready: &[bool]) -> Snapshot {
        let namespaces = [
            "default",
            "kube-system",
            "kube-node-lease",
            "kyverno",
            "kca-webhook-target",
        ]
        .iter()
        .map(|n| (n.to_string(), namespace_labels(n)))
        .collect();
        Snapshot {
            validating,
            mutating,
            namespaces,
            endpoint_slices: BTreeMap::from([(
                "kyverno/kyverno-svc".to_owned(),
                vec![ready_slice(ready)],
            )]),
            policies: Default::default(),
        }
    }

    fn codes(r: &AuditReport) -> Vec<FindingCode> {
        r.findings.iter().map(|f| f.code).collect()
    }

    #[test]
    fn the_labs_registration_with_a_ready_controller_has_no_finding() {
        let r = audit(&snapshot(
            vec![config(
                "kyverno-resource-validating-webhook-cfg",
                vec![lab_webhook()],
            )],
            vec![],
            &[true],
        ));
        assert_eq!(codes(&r), vec![]);
        let w = &r.webhooks[0];
        assert_eq!(w.failure_policy, "Fail");
        assert_eq!(w.timeout_seconds, 3);
        assert_eq!(w.side_effects.as_deref(), Some("NoneOnDryRun"));
        assert!(matches!(
            w.backend,
            Backend::Service {
                ready_endpoints: Some(1),
                ..
            }
        ));
        assert_eq!(w.intercepts, Intercepts::default());
        let wait = w.worst_wait.as_ref().unwrap();
        assert_eq!(wait.seconds, 3);
        assert_eq!(wait.request, "CREATE v1/pods in kca-webhook-target");
    }

    #[test]
    fn a_fail_webhook_without_ready_endpoints_is_found_and_a_not_ready_one_does_not_count() {
        for ready in [&[][..], &[false][..]] {
            let r = audit(&snapshot(
                vec![config("c", vec![lab_webhook()])],
                vec![],
                ready,
            ));
            assert_eq!(
                codes(&r),
                vec![FindingCode::FailNoReadyEndpoints],
                "{ready:?}"
            );
            assert!(r.findings[0].facts.contains("kyverno/kyverno-svc: 0 ready"));
        }
        // Under Ignore the same absence is no finding (the request is admitted at once).
        let mut ignore = lab_webhook();
        ignore["failurePolicy"] = json!("Ignore");
        let r = audit(&snapshot(vec![config("c", vec![ignore])], vec![], &[]));
        assert_eq!(codes(&r), vec![]);
        // EndpointSlices not read: unknown, not zero.
        let mut s = snapshot(vec![config("c", vec![lab_webhook()])], vec![], &[]);
        s.endpoint_slices.clear();
        assert_eq!(codes(&audit(&s)), vec![]);
    }

    #[test]
    fn an_ignore_webhook_with_a_long_timeout_is_found_above_the_limit_only() {
        for (timeout, found) in [
            (IGNORE_TIMEOUT_LIMIT_SECONDS, false),
            (IGNORE_TIMEOUT_LIMIT_SECONDS + 1, true),
        ] {
            let mut w = lab_webhook();
            w["failurePolicy"] = json!("Ignore");
            w["timeoutSeconds"] = json!(timeout);
            let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
            assert_eq!(!r.findings.is_empty(), found, "{timeout}");
        }
        // Absent timeoutSeconds is 10 s, absent failurePolicy Fail.
        let mut w = lab_webhook();
        w.as_object_mut().unwrap().remove("timeoutSeconds");
        w.as_object_mut().unwrap().remove("failurePolicy");
        let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
        assert_eq!(
            (
                r.webhooks[0].timeout_seconds,
                r.webhooks[0].failure_policy.as_str()
            ),
            (10, "Fail")
        );
    }

    #[test]
    fn an_opt_out_object_selector_is_found_and_an_opt_in_one_is_not() {
        for (sel, found) in [
            (
                json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "policy", "operator": "NotIn", "values": ["off"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}),
                false,
            ),
            (json!({}), false),
        ] {
            let mut w = lab_webhook();
            w["objectSelector"] = sel.clone();
            let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
            assert_eq!(
                codes(&r) == vec![FindingCode::OptOutObjectSelector],
                found,
                "{sel}"
            );
        }
    }

    #[test]
    fn a_fail_webhook_on_nodes_csrs_or_leases_is_found_whatever_its_namespace_selector() {
        let cases = [
            (
                json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes"]}),
                "nodes",
            ),
            (
                json!({"apiGroups": ["certificates.k8s.io"], "apiVersions": ["*"], "operations": ["CREATE"], "resources": ["certificatesigningrequests"]}),
                "certificatesigningrequests",
            ),
            (
                json!({"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["leases"], "scope": "Namespaced"}),
                "leases",
            ),
        ];
        for (rule, what) in cases {
            let mut w = lab_webhook();
            // The lab's selector (one namespace) exempts neither cluster-scoped kinds nor, for
            // Leases, kube-node-lease, which it does not select: only nodes and CSRs are found.
            w["rules"] = json!([rule]);
            w["namespaceSelector"] = json!({});
            let r = audit(&snapshot(
                vec![config("c", vec![w.clone()])],
                vec![],
                &[true],
            ));
            assert_eq!(
                codes(&r),
                vec![FindingCode::FailOnBootstrapResources],
                "{what}"
            );
            assert!(r.findings[0].facts.contains(what), "{:?}", r.findings[0]);
            w["failurePolicy"] = json!("Ignore");
            let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
            assert_eq!(codes(&r), vec![], "{what} under Ignore");
        }
        // kube-system's Leases: a selector that keeps kube-system and kube-node-lease out spares them.
        let mut w = lab_webhook();
        w["rules"] = json!([{"apiGroups": ["coordination.k8s.io"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["leases"]}]);
        w["namespaceSelector"] = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kube-node-lease"]}]});
        let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
        assert_eq!(r.webhooks[0].intercepts, Intercepts::default());
    }

    #[test]
    fn kube_system_is_intercepted_when_the_selector_selects_it() {
        let mut w = lab_webhook();
        w["namespaceSelector"] = json!({});
        let r = audit(&snapshot(
            vec![config("c", vec![w.clone()])],
            vec![],
            &[true],
        ));
        assert!(r.webhooks[0].intercepts.kube_system);
        // A rule for cluster-scoped objects only does not reach kube-system.
        w["rules"][0]["scope"] = json!("Cluster");
        let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
        assert!(!r.webhooks[0].intercepts.kube_system);
    }

    #[test]
    fn the_worst_wait_sums_mutating_timeouts_and_takes_the_longest_validating_one() {
        let pods_everywhere = |name: &str, timeout: u64| {
            json!({"name": name, "failurePolicy": "Ignore", "timeoutSeconds": timeout, "sideEffects": "None",
                   "clientConfig": {"url": "https://example.invalid"},
                   "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]})
        };
        let mut m2 = pods_everywhere("m2", 4);
        m2["reinvocationPolicy"] = json!("IfNeeded");
        let r = audit(&snapshot(
            vec![config("v", vec![lab_webhook(), pods_everywhere("v2", 7)])],
            vec![config("m", vec![pods_everywhere("m1", 2), m2])],
            &[true],
        ));
        let lab = r
            .webhooks
            .iter()
            .find(|w| w.webhook.contains("kca-webhook-label"))
            .unwrap();
        let wait = lab.worst_wait.as_ref().unwrap();
        // m1 2 s + m2 4 s twice (IfNeeded) + max(3, 7) s.
        assert_eq!(wait.seconds, 2 + 8 + 7, "{wait:?}");
        assert_eq!(
            wait.chain,
            vec![
                "m/m1",
                "m/m2",
                "v/vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label",
                "v/v2"
            ]
        );
        // v2 alone reaches kube-system too, where the lab's webhook is not called.
        let v2 = r.webhooks.iter().find(|w| w.webhook == "v2").unwrap();
        assert_eq!(v2.worst_wait.as_ref().unwrap().seconds, 17);
        // Mutating first, in the order the API server calls them.
        let names: Vec<&str> = r.webhooks.iter().map(|w| w.webhook.as_str()).collect();
        assert_eq!(names[..2], ["m1", "m2"]);
    }

    /// Seen on the embedded cluster: a `scope: "*"` pod rule was taken for cluster-scoped pods too
    /// (where no namespaceSelector applies), so a webhook selecting no namespace looked called.
    #[test]
    fn a_resource_is_waited_for_in_its_own_scope_only() {
        let mut w = lab_webhook();
        w["failurePolicy"] = json!("Ignore");
        w["namespaceSelector"] = json!({"matchLabels": {"no": "such-namespace"}});
        let r = audit(&snapshot(vec![config("c", vec![w])], vec![], &[true]));
        assert_eq!(
            r.webhooks[0].worst_wait, None,
            "{:?}",
            r.webhooks[0].worst_wait
        );
        let mut nodes = lab_webhook();
        nodes["rules"] = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"], "scope": "*"}]);
        let r = audit(&snapshot(vec![config("c", vec![nodes])], vec![], &[true]));
        assert_eq!(
            r.webhooks[0]
                .worst_wait
                .as_ref()
                .map(|w| w.request.as_str()),
            Some("CREATE v1/nodes (cluster scoped)")
        );
        assert!(!r.webhooks[0].intercepts.kube_system);
    }

    #[test]
    fn resources_overlap_by_the_api_servers_wildcards() {
        assert!(resources_overlap("*", "pods"));
        assert!(!resources_overlap("*", "pods/status"));
        assert!(resources_overlap("*/*", "pods/status"));
        assert!(resources_overlap("pods/*", "pods/exec"));
        assert!(!resources_overlap("pods/*", "pods"));
        assert!(!resources_overlap("pods", "nodes"));
    }

    #[test]
    fn every_finding_code_has_a_wire_name_and_the_report_a_schema() {
        use strum::IntoEnumIterator;
        let names: Vec<&str> = FindingCode::iter().map(FindingCode::as_str).collect();
        assert_eq!(
            names,
            [
                "fail-no-ready-endpoints",
                "ignore-long-timeout",
                "opt-out-object-selector",
                "fail-on-bootstrap-resources"
            ]
        );
        let s = schema();
        assert!(s.pointer("/properties/webhooks").is_some(), "{s}");
    }
}
