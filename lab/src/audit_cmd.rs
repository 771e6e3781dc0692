//! `kca-webhook-lab audit`: reads every admission webhook registration of any cluster (read-only:
//! LIST of ValidatingWebhookConfigurations, MutatingWebhookConfigurations and Namespaces, and the
//! EndpointSlices of each Service a webhook names, all through [`Cluster`]), judges them with the
//! pure [`lab_core::webhook_audit::audit`], and prints a table (default), JSON or YAML.
//!
//! Exit codes (`--help` says them): 0 no finding, 3 findings, 1 an error (the cluster could not be
//! read). As a kubectl plugin the binary is installed as `kubectl-kca_webhook_lab` and run as
//! `kubectl kca-webhook-lab audit` (krew's naming: `_` in the file name is `-` on the command
//! line); kubectl passes the arguments after the plugin's name, so `--kubeconfig` and
//! `--context` are the tool's own, with kubectl's meaning.

use std::collections::BTreeMap;

use lab_core::messages::webhook_audit as words;
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
    })
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
    Ok(if report.findings.is_empty() {
        0
    } else {
        EXIT_FINDINGS
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
    out.push_str(words::summary(report.webhooks.len(), report.findings.len()).get(lang));
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
