//! The lab environment on a fresh cluster: the two lab namespaces and the lab mark.
//!
//! **The lab mark** is the ConfigMap `kube-system/kca-webhook-lab` with the label
//! `app.kubernetes.io/managed-by=kca-webhook-lab` and data key `mark` = [`MARK_VALUE`]
//! (plus `cluster`, `node`, `nodeUID`, `backend`, `createdAt`). The lab crate checks it before any
//! fault: only a cluster carrying this exact ConfigMap is one the lab may disturb.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};

/// Namespace of the lab mark ConfigMap.
pub const MARK_NAMESPACE: &str = "kube-system";
/// Name of the lab mark ConfigMap.
pub const MARK_NAME: &str = "kca-webhook-lab";
/// Data key of the mark and its value.
pub const MARK_KEY: &str = "mark";
/// Value of data key [`MARK_KEY`].
pub const MARK_VALUE: &str = "kca-webhook-lab/v1";
/// Label on the mark ConfigMap and on the lab namespaces.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kca-webhook-lab");
/// The namespace whose pods the labs' policy matches.
pub const TARGET_NAMESPACE: &str = "kca-webhook-target";
/// The namespace the labs' policy does not match.
pub const CONTROL_NAMESPACE: &str = "kca-webhook-control";

/// Creates both lab namespaces and the mark ConfigMap (`createdAt` RFC 3339 UTC).
pub async fn apply(client: kube::Client, cluster: &str, node: &str, node_uid: &str) -> Result<()> {
    create_namespaces(client.clone(), false).await?;
    put_mark(client, cluster, node, node_uid, "embedded").await
}

/// Creates [`TARGET_NAMESPACE`] and [`CONTROL_NAMESPACE`] (label [`MANAGED_BY`]). With
/// `existing_ok`, a namespace that already exists is kept as it is (409 AlreadyExists is not an
/// error); returns the namespaces this call created.
pub async fn create_namespaces(client: kube::Client, existing_ok: bool) -> Result<Vec<String>> {
    let labels = BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())]);
    let ns_api: Api<Namespace> = Api::all(client);
    let mut created = Vec::new();
    for ns in [TARGET_NAMESPACE, CONTROL_NAMESPACE] {
        let obj = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                labels: Some(labels.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        match ns_api.create(&PostParams::default(), &obj).await {
            Ok(_) => created.push(ns.to_string()),
            Err(kube::Error::Api(s)) if existing_ok && s.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("creating namespace {ns}")),
        }
    }
    Ok(created)
}

/// Creates the lab mark ConfigMap; `backend` (`embedded`, `kubeconfig`, `k3s`) goes into its
/// data key `backend`.
pub async fn put_mark(
    client: kube::Client,
    cluster: &str,
    node: &str,
    node_uid: &str,
    backend: &str,
) -> Result<()> {
    let labels = BTreeMap::from([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())]);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(MARK_NAME.into()),
            namespace: Some(MARK_NAMESPACE.into()),
            labels: Some(labels),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            (MARK_KEY.to_string(), MARK_VALUE.to_string()),
            ("cluster".to_string(), cluster.to_string()),
            ("node".to_string(), node.to_string()),
            ("nodeUID".to_string(), node_uid.to_string()),
            ("backend".to_string(), backend.to_string()),
            (
                "createdAt".to_string(),
                chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
        ])),
        ..Default::default()
    };
    let api: Api<ConfigMap> = Api::namespaced(client, MARK_NAMESPACE);
    api.create(&PostParams::default(), &cm)
        .await
        .context("creating the lab mark ConfigMap kube-system/kca-webhook-lab")?;
    Ok(())
}
