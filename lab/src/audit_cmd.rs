//! `kca-webhook-lab audit`: reads every admission webhook registration of any cluster (read-only:
//! LIST of ValidatingWebhookConfigurations, MutatingWebhookConfigurations and Namespaces, and the
//! EndpointSlices of each Service a webhook names, all through [`Cluster`]), and the API server's
//! own admission policies ([`read_policies`]: discovery of `admissionregistration.k8s.io`, then
//! LIST of the ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their bindings in the
//! version served, and of each binding's params), judges them with the pure
//! [`lab_core::webhook_audit::audit`] and [`lab_core::policy_audit::audit`], and prints a table
//! (default), JSON or YAML.
//!
//! Exit codes (`--help` says them): 0 no finding, 3 findings, 1 an error (the cluster could not be
//! read). As a kubectl plugin the binary is installed as `kubectl-kca_webhook_lab` and run as
//! `kubectl kca-webhook-lab audit` (krew's naming: `_` in the file name is `-` on the command
//! line); kubectl passes the arguments after the plugin's name, so `--kubeconfig` and
//! `--context` are the tool's own, with kubectl's meaning.

use std::collections::BTreeMap;

use lab_core::messages::webhook_audit as words;
use lab_core::policy_audit::{self, KindAudit, Params, PolicyKind, PolicySnapshot, Served};
use lab_core::text::Lang;
use lab_core::webhook_audit::{AuditReport, Backend, Snapshot, WebhookRow, audit};
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use crate::cluster::Cluster;
use crate::error::LabError;

/// `-o`: how the audit is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// A table, then the rules and the findings.
    #[default]
    Table,
    /// [`AuditReport`] as JSON.
    Json,
    /// [`AuditReport`] as YAML.
    Yaml,
}

/// The exit code when the audit found something.
pub const EXIT_FINDINGS: i32 = 3;

/// Reads what [`audit`] judges, as the API server returns it: both kinds of webhook
/// configuration, every Namespace's labels, and the EndpointSlices of each Service named by a
/// webhook's `clientConfig.service`.
///
/// Errors: a LIST the credentials may not do, or an unreachable cluster ([`LabError`]).
pub async fn read_snapshot(cluster: &Cluster) -> Result<Snapshot, LabError> {
    let items = |v: Value| -> Vec<Value> {
        v.get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let validating = items(
        cluster
            .list_raw(
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                None,
            )
            .await?,
    );
    let mutating = items(
        cluster
            .list_raw(
                "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
                None,
            )
            .await?,
    );
    let mut namespaces = BTreeMap::new();
    for ns in items(cluster.list_raw("/api/v1/namespaces", None).await?) {
        let name = ns
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let labels: BTreeMap<String, String> = ns
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default();
        namespaces.insert(name, labels);
    }
    let mut endpoint_slices = BTreeMap::new();
    for config in validating.iter().chain(&mutating) {
        for w in config
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(svc) = w.pointer("/clientConfig/service") else {
                continue;
            };
            let ns = svc
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let name = svc.get("name").and_then(Value::as_str).unwrap_or_default();
            let key = format!("{ns}/{name}");
            if endpoint_slices.contains_key(&key) {
                continue;
            }
            let list = cluster
                .list_raw(
                    &format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"),
                    Some(&format!("kubernetes.io/service-name={name}")),
                )
                .await?;
            endpoint_slices.insert(key, items(list));
        }
    }
    Ok(Snapshot {
        validating,
        mutating,
        namespaces,
        endpoint_slices,
        policies: read_policies(cluster).await?,
    })
}

/// The `items` of a List object (empty when it has none).
fn list_items(v: &Value) -> Vec<Value> {
    v.get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The resources a discovery document (`/api/v1`, `/apis/GROUP/VERSION`) lists.
fn resources(doc: &Value) -> &[Value] {
    doc.get("resources")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Reads both kinds of admission policy and their bindings in the newest version
/// ([`policy_audit::VERSIONS`]) whose discovery document lists them, and the params of every
/// binding with a `paramRef` whose policy has a `paramKind` ([`read_params`]).
///
/// Errors: a discovery GET or a LIST refused other than by 404 ([`LabError`]).
pub async fn read_policies(cluster: &Cluster) -> Result<PolicySnapshot, LabError> {
    const GROUP: &str = "/apis/admissionregistration.k8s.io";
    let mut docs = Vec::new();
    for v in policy_audit::VERSIONS {
        if let Some(doc) = cluster.get_raw_optional(&format!("{GROUP}/{v}")).await? {
            docs.push((v, doc));
        }
    }
    let mut snapshot = PolicySnapshot::default();
    for kind in [PolicyKind::Validating, PolicyKind::Mutating] {
        let Some((v, _)) = docs.iter().find(|(_, d)| {
            resources(d)
                .iter()
                .any(|r| r.get("name").and_then(Value::as_str) == Some(kind.resource()))
        }) else {
            continue;
        };
        let list = |res: &'static str| format!("{GROUP}/{v}/{res}");
        let served = Served {
            version: Some((*v).to_owned()),
            policies: list_items(&cluster.list_raw(&list(kind.resource()), None).await?),
            bindings: list_items(
                &cluster
                    .list_raw(&list(kind.binding_resource()), None)
                    .await?,
            ),
        };
        for b in &served.bindings {
            let policy_name = b.pointer("/spec/policyName").and_then(Value::as_str);
            let policy = served
                .policies
                .iter()
                .find(|p| p.pointer("/metadata/name").and_then(Value::as_str) == policy_name);
            let param_kind = policy.and_then(|p| p.pointer("/spec/paramKind"));
            if let (Some(pk), Some(pr)) = (param_kind, b.pointer("/spec/paramRef")) {
                let name = b
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let params = read_params(cluster, pk, pr).await?;
                snapshot
                    .params
                    .insert(policy_audit::params_key(kind, name), params);
            }
        }
        match kind {
            PolicyKind::Validating => snapshot.validating = served,
            PolicyKind::Mutating => snapshot.mutating = served,
        }
    }
    Ok(snapshot)
}

/// The params a binding's `paramRef` names, of the policy's `paramKind`: the kind's resource
/// from discovery (not served: [`Params::KindNotServed`]), then the objects of it matching the
/// `paramRef`'s `name` or `selector`, in its `namespace` when set, else in every namespace (a
/// namespaced kind without `namespace` is looked up in each request's namespace).
///
/// Errors: a LIST of the params refused ([`LabError`]).
pub async fn read_params(
    cluster: &Cluster,
    param_kind: &Value,
    param_ref: &Value,
) -> Result<Params, LabError> {
    let api_version = param_kind
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = param_kind
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let Some(doc) = cluster.get_raw_optional(&base).await? else {
        return Ok(Params::KindNotServed);
    };
    let Some(res) = resources(&doc).iter().find(|r| {
        r.get("kind").and_then(Value::as_str) == Some(kind)
            && r.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.contains('/'))
    }) else {
        return Ok(Params::KindNotServed);
    };
    let resource = res.get("name").and_then(Value::as_str).unwrap_or_default();
    let namespaced = res.get("namespaced").and_then(Value::as_bool) == Some(true);
    let path = match param_ref.get("namespace").and_then(Value::as_str) {
        Some(ns) if namespaced => format!("{base}/namespaces/{ns}/{resource}"),
        _ => format!("{base}/{resource}"),
    };
    let selector = param_ref
        .get("selector")
        .map(label_selector)
        .filter(|s| s != "*");
    let items = list_items(&cluster.list_raw(&path, selector.as_deref()).await?);
    let name = param_ref.get("name").and_then(Value::as_str);
    let count = items
        .iter()
        .filter(|o| {
            name.is_none_or(|n| o.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
        })
        .count() as u64;
    Ok(Params::Found { count })
}

/// Connects with `kubeconfig`/`context` (kubectl's inference when no file is given), reads, judges
/// and prints in `output`; returns the exit code (0 or [`EXIT_FINDINGS`]).
pub async fn run(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
    output: Output,
    lang: Lang,
) -> Result<i32, LabError> {
    let cluster = Cluster::connect_as_kubectl(kubeconfig, context).await?;
    let report = audit(&read_snapshot(&cluster).await?);
    println!("{}", render(&report, output, lang)?);
    Ok(if report.has_findings() {
        EXIT_FINDINGS
    } else {
        0
    })
}

/// The report in `output` (module docs), in `lang` for the table.
pub fn render(report: &AuditReport, output: Output, lang: Lang) -> Result<String, LabError> {
    match output {
        Output::Json => serde_json::to_string_pretty(report)
            .map_err(|e| LabError::Usage(format!("encoding the audit as JSON: {e}"))),
        Output::Yaml => serde_yaml_ng::to_string(report)
            .map(|s| s.trim_end().to_owned())
            .map_err(|e| LabError::Usage(format!("encoding the audit as YAML: {e}"))),
        Output::Table => Ok(table(report, lang)),
    }
}

/// The table: one row per webhook (columns: [`words::COLUMNS`]), then each webhook's rules, the
/// findings and the closing line.
pub fn table(report: &AuditReport, lang: Lang) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        words::COLUMNS
            .iter()
            .map(|c| c.get(lang).to_owned())
            .collect(),
    ];
    for w in &report.webhooks {
        rows.push(vec![
            kind(w).to_owned(),
            format!("{}/{}", w.configuration, w.webhook),
            w.failure_policy.clone(),
            format!("{}s", w.timeout_seconds),
            endpoints(w, lang),
            w.side_effects.clone().unwrap_or_else(|| "-".to_owned()),
            intercepts(w, lang),
            match &w.worst_wait {
                Some(ww) => words::worst_wait(ww.seconds, &ww.request)
                    .get(lang)
                    .to_owned(),
                None => words::NOT_CALLED.get(lang).to_owned(),
            },
            selectors(w),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].width()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.width())))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if !report.webhooks.is_empty() {
        out.push_str(&format!("\n{}:\n", words::RULES.get(lang)));
        for w in &report.webhooks {
            out.push_str(&format!(
                "  {}/{}: {}\n",
                w.configuration,
                w.webhook,
                rules(&w.rules)
            ));
        }
    }
    if !report.findings.is_empty() {
        out.push_str(&format!("\n{}:\n", words::FINDINGS.get(lang)));
        for f in &report.findings {
            let kind = match f.kind {
                lab_core::webhook_audit::Kind::Validating => "validating",
                lab_core::webhook_audit::Kind::Mutating => "mutating",
            };
            let line = words::finding(
                f.code.as_str(),
                kind,
                &format!("{}/{}", f.configuration, f.webhook),
                &f.facts,
                words::finding_text(f.code).get(lang),
            );
            out.push_str(&format!("  {}\n", line.get(lang)));
        }
    }
    out.push('\n');
    out.push_str(&policies_table(&report.admission_policies, lang));
    out.push('\n');
    out.push_str(words::summary(report.webhooks.len(), report.findings.len()).get(lang));
    let p = &report.admission_policies;
    let count = |f: fn(&KindAudit) -> usize| f(&p.validating) + f(&p.mutating);
    out.push('\n');
    out.push_str(
        words::policy_summary(
            count(|k| k.policies.len()),
            count(|k| k.bindings.len()),
            p.findings.len(),
        )
        .get(lang),
    );
    out
}

/// The admission policies under the webhooks' table: per kind its version (or "not served"),
/// each policy and each binding, then the findings on bindings.
pub fn policies_table(p: &policy_audit::PolicyAudit, lang: Lang) -> String {
    let mut out = String::new();
    for k in [&p.validating, &p.mutating] {
        let kind = k.kind.kind_name();
        let Some(version) = &k.served else {
            out.push_str(words::policy_not_served(kind, words::NOT_SERVED.get(lang)).get(lang));
            out.push('\n');
            continue;
        };
        let heading = words::policy_heading(
            kind,
            &format!("admissionregistration.k8s.io/{version}"),
            k.policies.len(),
            k.bindings.len(),
        );
        out.push_str(heading.get(lang));
        out.push('\n');
        for pol in &k.policies {
            let pk = match (pol.param_kind.get("apiVersion"), pol.param_kind.get("kind")) {
                (Some(a), Some(k)) => format!(
                    "{} {}",
                    a.as_str().unwrap_or("?"),
                    k.as_str().unwrap_or("?")
                ),
                _ => "-".to_owned(),
            };
            let bindings = if pol.bindings.is_empty() {
                "-".to_owned()
            } else {
                pol.bindings.join(", ")
            };
            out.push_str(
                words::policy_line(&pol.name, &pol.failure_policy, &pk, &bindings).get(lang),
            );
            out.push('\n');
        }
        for b in &k.bindings {
            let actions = b
                .validation_actions
                .as_ref()
                .map_or("-".to_owned(), |a| format!("[{}]", a.join(",")));
            let param_ref = match (b.param_ref.get("namespace"), b.param_ref.get("name")) {
                _ if b.param_ref.is_null() => "-".to_owned(),
                (Some(ns), Some(n)) => {
                    format!("{}/{}", ns.as_str().unwrap_or(""), n.as_str().unwrap_or(""))
                }
                (None, Some(n)) => n.as_str().unwrap_or("").to_owned(),
                _ => format!(
                    "selector {}",
                    label_selector(b.param_ref.get("selector").unwrap_or(&Value::Null))
                ),
            };
            let params = match &b.params {
                None => "-".to_owned(),
                Some(Params::KindNotServed) => words::PARAMS_KIND_NOT_SERVED.get(lang).to_owned(),
                Some(Params::Found { count }) => words::params_found(*count).get(lang).to_owned(),
            };
            out.push_str(
                words::binding_line(&b.name, &b.policy_name, &actions, &param_ref, &params)
                    .get(lang),
            );
            out.push('\n');
        }
    }
    if !p.findings.is_empty() {
        out.push_str(&format!("\n{}:\n", words::POLICY_FINDINGS.get(lang)));
        for f in &p.findings {
            let kind = match f.kind {
                PolicyKind::Validating => "validating",
                PolicyKind::Mutating => "mutating",
            };
            let line = words::policy_finding(
                f.code.as_str(),
                kind,
                &f.binding,
                &f.policy,
                &f.facts,
                words::policy_finding_text(f.code).get(lang),
            );
            out.push_str(&format!("  {}\n", line.get(lang)));
        }
    }
    out
}

fn kind(w: &WebhookRow) -> &'static str {
    match w.kind {
        lab_core::webhook_audit::Kind::Validating => "validating",
        lab_core::webhook_audit::Kind::Mutating => "mutating",
    }
}

fn endpoints(w: &WebhookRow, lang: Lang) -> String {
    match &w.backend {
        Backend::Service {
            namespace,
            name,
            ready_endpoints,
            ..
        } => match ready_endpoints {
            Some(n) => format!("{n} ({namespace}/{name})"),
            None => format!("{} ({namespace}/{name})", words::NOT_READ.get(lang)),
        },
        Backend::Url { .. } => words::URL_BACKEND.get(lang).to_owned(),
        Backend::Unknown => "-".to_owned(),
    }
}

fn intercepts(w: &WebhookRow, lang: Lang) -> String {
    let i = w.intercepts;
    let names: Vec<&str> = [
        (i.kube_system, "kube-system"),
        (i.nodes, "Node"),
        (i.leases, "Lease"),
        (i.csrs, "CSR"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| *n)
    .collect();
    if names.is_empty() {
        words::NONE.get(lang).to_owned()
    } else {
        names.join(",")
    }
}

/// `ns=<selector> obj=<selector> conds=N`, selectors in kubectl's label-selector syntax.
fn selectors(w: &WebhookRow) -> String {
    let conds = w.match_conditions.as_array().map_or(0, Vec::len);
    format!(
        "ns={} obj={} conds={conds}",
        label_selector(&w.namespace_selector),
        label_selector(&w.object_selector)
    )
}

/// A metav1 LabelSelector in kubectl's syntax (`k=v,k notin (a,b),k,!k`); `*` when it selects
/// everything.
pub fn label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    for r in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = r.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = r
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match r.get("operator").and_then(Value::as_str) {
            Some("In") => format!("{key} in ({})", values.join(",")),
            Some("NotIn") => format!("{key} notin ({})", values.join(",")),
            Some("Exists") => key.to_owned(),
            Some("DoesNotExist") => format!("!{key}"),
            other => format!("{key} {other:?}"),
        });
    }
    if parts.is_empty() {
        "*".to_owned()
    } else {
        parts.join(",")
    }
}

/// `rules` as `OPS group/version/resources[ scope]; …`.
fn rules(rules: &Value) -> String {
    let list = |r: &Value, k: &str| -> String {
        r.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| if s.is_empty() { "core" } else { s })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    let parts: Vec<String> = rules
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let scope = r.get("scope").and_then(Value::as_str).unwrap_or("*");
            format!(
                "{} {}/{}/{}{}",
                list(r, "operations"),
                list(r, "apiGroups"),
                list(r, "apiVersions"),
                list(r, "resources"),
                if scope == "*" {
                    String::new()
                } else {
                    format!(" ({scope})")
                }
            )
        })
        .collect();
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn selectors_read_as_kubectl_writes_them() {
        assert_eq!(label_selector(&Value::Null), "*");
        assert_eq!(label_selector(&json!({})), "*");
        assert_eq!(
            label_selector(&json!({
                "matchLabels": {"a": "b"},
                "matchExpressions": [
                    {"key": "k", "operator": "NotIn", "values": ["x", "y"]},
                    {"key": "e", "operator": "Exists"},
                    {"key": "d", "operator": "DoesNotExist"}
                ]
            })),
            "a=b,k notin (x,y),e,!d"
        );
    }
}
