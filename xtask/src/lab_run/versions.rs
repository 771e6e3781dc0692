//! The versions a lab run actually ran on, read from the live cluster once it is up and written
//! to `<artifacts>/versions.json` (the run metadata `cargo xtask matrix` builds its columns from).
//!
//! Raw first: the API server's `/version` answer is kept verbatim; the Kyverno admission
//! controller's image and the Deployment's `helm.sh/chart` label are quoted as the GET returned
//! them; what was asked for (`--kubernetes`/`--kyverno`) is recorded beside them, so a cell
//! whose build ran something else shows it.

use std::path::Path;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

use crate::cluster::kyverno;
use crate::cluster::ready::{block_on, client, get_text};
use crate::upstream::Versions;
use crate::upstream::versions::Support;

/// File name of the run metadata beside a lab's evidence.
pub const VERSIONS_FILE: &str = "versions.json";

/// Reads `/version` and the admission controller's Deployment through `kubeconfig` and returns
/// the `versions.json` document: `asked` (the pair), `support` (Kyverno's stated range),
/// `apiserver_version` (the `/version` JSON verbatim), `kyverno_image`, `kyverno_chart` (the
/// Deployment's `helm.sh/chart` label), `kyverno_deployment_uid`.
///
/// # Errors
/// The cluster cannot be reached, `/version` is not JSON, or the Deployment is missing.
pub fn observe(kubeconfig: &Path, asked: &Versions) -> Result<serde_json::Value> {
    let (version, deployment) = block_on(async {
        let c = client(kubeconfig).await?;
        let text = get_text(&c, "/version").await?;
        let d = Api::<Deployment>::namespaced(c.clone(), kyverno::NAMESPACE)
            .get(kyverno::DEPLOYMENTS[0])
            .await
            .with_context(|| {
                format!(
                    "GET deployment {}/{}",
                    kyverno::NAMESPACE,
                    kyverno::DEPLOYMENTS[0]
                )
            })?;
        anyhow::Ok((text, d))
    })??;
    let version: serde_json::Value = serde_json::from_str(&version)
        .with_context(|| format!("/version is not JSON: {version}"))?;
    let image = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| {
            p.containers
                .iter()
                .find(|c| c.name == lab::cri::ADMISSION_CONTAINER)
        })
        .and_then(|c| c.image.clone());
    let chart = deployment
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("helm.sh/chart").cloned());
    Ok(serde_json::json!({
        "asked": asked,
        "pinned": Versions::pinned(),
        "support": support_json(asked),
        "apiserver_version": version,
        "kyverno_image": image,
        "kyverno_chart": chart,
        "kyverno_deployment_uid": deployment.metadata.uid,
    }))
}

/// `{"supported": true}` or `{"supported": false, "range": "v1.33–v1.35", "source": …}`.
pub fn support_json(v: &Versions) -> serde_json::Value {
    match v.support() {
        Ok(Support::Supported) => serde_json::json!({"supported": true}),
        Ok(Support::Outside { range, source }) => serde_json::json!({
            "supported": false,
            "range": format!("v1.{}–v1.{}", range.0, range.1),
            "source": source,
        }),
        Err(e) => serde_json::json!({"supported": null, "error": format!("{e:#}")}),
    }
}

/// [`observe`], then writes it to `<artifacts>/versions.json` and prints one line.
///
/// # Errors
/// As [`observe`], or writing the file.
pub fn record(kubeconfig: &Path, asked: &Versions, artifacts: &Path) -> Result<serde_json::Value> {
    let doc = observe(kubeconfig, asked)?;
    let path = artifacts.join(VERSIONS_FILE);
    crate::backend::write_facts(&path, &doc)?;
    crate::status_line!(
        " • running: kube-apiserver {}, {}, chart {} (asked: {}) → {}",
        doc["apiserver_version"]["gitVersion"]
            .as_str()
            .unwrap_or("?"),
        doc["kyverno_image"].as_str().unwrap_or("?"),
        doc["kyverno_chart"].as_str().unwrap_or("?"),
        asked.label(),
        path.display()
    );
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_is_labelled_from_kyvernos_stated_range() {
        assert_eq!(
            support_json(&Versions::pinned()),
            serde_json::json!({"supported": true})
        );
        let out = support_json(&Versions::new("v1.36.3", "v1.19.1").unwrap());
        assert_eq!(out["supported"], false);
        assert_eq!(out["range"], "v1.33–v1.35");
        assert!(
            out["source"].as_str().unwrap().contains("endoflife.date"),
            "{out}"
        );
    }
}
