//! The `kubeconfig` backend: an existing cluster you are on the node of (a student's lab VM with
//! k3s v1.35.8+k3s1, or an embedded cluster started on its own with `cargo xtask cluster up`).
//!
//! [`acquire`] first only looks, then changes what it was asked to:
//! 1. reads `/version` (`gitVersion`), the node (exactly one: the freeze needs the CRI endpoint of
//!    the node that runs Kyverno), the CRI runtime's version through `--cri-endpoint`, and whether
//!    the labs' policy `kca-webhook-label` already exists (then the cluster already ran a lab and is
//!    refused: each lab needs a fresh cluster);
//! 2. refuses a Kubernetes other than [`super::PINNED_KUBERNETES`] unless `--allow-other-versions`;
//! 3. Kyverno: when its admission controller Deployment is absent, installs the assembled chart
//!    with the built Helm (`--install-kyverno`, the embedded backend's own install code
//!    [`crate::cluster::kyverno::helm_install_at`]) or refuses; then waits until it answers and
//!    refuses an admission image tag other than [`super::PINNED_KYVERNO`] unless
//!    `--allow-other-versions`;
//! 4. creates the lab namespaces (kept when present);
//! 5. puts the lab mark only with `--mark-as-lab`; without it a cluster lacking the mark stays
//!    unmarked and the lab refuses every fault there (said on stderr and recorded).
//!
//! Everything seen is recorded in [`super::ClusterHandle::facts`] (`backend.json` in the artifacts).
//! The cluster is never torn down by this backend.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use serde_json::json;

use super::{
    ClusterHandle, Owned, PINNED_KUBERNETES, PINNED_KYVERNO, image_tag, is_pinned_kubernetes,
};
use crate::cluster::kyverno;
use crate::cluster::ready::{block_on, client, get_text};
use crate::status::Step;

/// k3s's kubeconfig, the default `--kubeconfig` when it exists.
pub const K3S_KUBECONFIG: &str = lab::cluster::K3S_KUBECONFIG;
/// k3s's containerd socket, the default `--cri-endpoint` when it exists.
pub const K3S_CRI_ENDPOINT: &str = lab::cri::K3S_CRI_ENDPOINT;
/// The labs' policy name: present means the cluster already ran a lab.
pub const LAB_POLICY: &str = "kca-webhook-label";
/// Bound of the wait until Kyverno answers (after an install, or to confirm an existing one).
pub const KYVERNO_TIMEOUT: Duration = Duration::from_secs(420);

/// Settings of the kubeconfig backend (the `lab run` flags of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The cluster's kubeconfig (cluster-admin).
    pub kubeconfig: PathBuf,
    /// The node's CRI endpoint (socket path or `unix://…`).
    pub cri_endpoint: PathBuf,
    /// Install Kyverno when absent (`--install-kyverno`).
    pub install_kyverno: bool,
    /// Put the lab mark (`--mark-as-lab`).
    pub mark_as_lab: bool,
    /// Accept other versions and record them (`--allow-other-versions`).
    pub allow_other_versions: bool,
}

impl Options {
    /// Fills in k3s's defaults ([`K3S_KUBECONFIG`], [`K3S_CRI_ENDPOINT`]) when a path is not given
    /// and the default exists.
    ///
    /// Errors: a path neither given nor present at k3s's default, naming the flag to pass.
    pub fn resolve(
        kubeconfig: Option<&Path>,
        cri_endpoint: Option<&Path>,
        install_kyverno: bool,
        mark_as_lab: bool,
        allow_other_versions: bool,
    ) -> Result<Options> {
        let kubeconfig = match kubeconfig {
            Some(p) => p.to_path_buf(),
            None if Path::new(K3S_KUBECONFIG).exists() => PathBuf::from(K3S_KUBECONFIG),
            None => bail!(
                "the kubeconfig backend needs the cluster's kubeconfig: {K3S_KUBECONFIG} does not exist; pass --kubeconfig (or set KCA_KUBECONFIG)"
            ),
        };
        let cri_endpoint = match cri_endpoint {
            Some(p) => p.to_path_buf(),
            None if Path::new(K3S_CRI_ENDPOINT).exists() => PathBuf::from(K3S_CRI_ENDPOINT),
            None => bail!(
                "the kubeconfig backend needs the node's CRI endpoint: {K3S_CRI_ENDPOINT} does not exist; pass --cri-endpoint (or set KCA_CRI_ENDPOINT)"
            ),
        };
        Ok(Options {
            kubeconfig,
            cri_endpoint,
            install_kyverno,
            mark_as_lab,
            allow_other_versions,
        })
    }
}

/// What the read-only look at the cluster found.
#[derive(Debug, Clone)]
struct Seen {
    git_version: String,
    node_name: String,
    node_uid: String,
    node_info: serde_json::Value,
    cri_runtime: String,
    policy_present: bool,
    kyverno_image: Option<String>,
}

fn step_err<T>(r: std::result::Result<T, lab::error::LabError>, what: &str) -> Result<T> {
    r.map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| what.to_string())
}

async fn look(opts: &Options) -> Result<Seen> {
    let c = client(&opts.kubeconfig).await?;
    let version = get_text(&c, "/version").await?;
    let v: serde_json::Value = serde_json::from_str(&version).context("parsing /version")?;
    let git_version = v["gitVersion"].as_str().unwrap_or_default().to_string();
    let nodes = Api::<Node>::all(c.clone())
        .list(&ListParams::default())
        .await
        .context("listing nodes")?;
    if nodes.items.len() != 1 {
        bail!(
            "the cluster behind {} has {} nodes ({}); the labs need a single-node cluster whose CRI endpoint is the node that runs Kyverno",
            opts.kubeconfig.display(),
            nodes.items.len(),
            nodes
                .items
                .iter()
                .filter_map(|n| n.metadata.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let node = &nodes.items[0];
    let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
    let node_info = json!({
        "kubeletVersion": info.map(|i| i.kubelet_version.clone()),
        "containerRuntimeVersion": info.map(|i| i.container_runtime_version.clone()),
        "osImage": info.map(|i| i.os_image.clone()),
        "kernelVersion": info.map(|i| i.kernel_version.clone()),
    });
    let lc = step_err(
        lab::cluster::Cluster::connect(Some(&opts.kubeconfig)).await,
        "connecting with the lab's cluster client",
    )?;
    let kyverno_image = admission_image(&c).await?;
    // Without Kyverno its CRDs (and so any ValidatingPolicy) do not exist: the API answers a bare
    // 404 page, not a Status, so the policy is only looked for when Kyverno is there.
    let policy_present = match &kyverno_image {
        Some(_) => step_err(
            lc.policy(LAB_POLICY).await,
            "looking for an earlier lab's policy",
        )?
        .is_some(),
        None => false,
    };
    let mut cri = step_err(
        lab::cri::CriClient::connect(&opts.cri_endpoint).await,
        &format!(
            "connecting to the CRI endpoint {}",
            opts.cri_endpoint.display()
        ),
    )?;
    let cri_runtime = step_err(cri.runtime_version().await, "CRI Version")?;
    Ok(Seen {
        git_version,
        node_name: node.metadata.name.clone().unwrap_or_default(),
        node_uid: node.metadata.uid.clone().unwrap_or_default(),
        node_info,
        cri_runtime,
        policy_present,
        kyverno_image,
    })
}

/// The image of container `kyverno` of Deployment `kyverno/kyverno-admission-controller`
/// (`None`: no such Deployment).
async fn admission_image(c: &kube::Client) -> Result<Option<String>> {
    let d = Api::<Deployment>::namespaced(c.clone(), kyverno::NAMESPACE)
        .get_opt(kyverno::DEPLOYMENTS[0])
        .await
        .with_context(|| {
            format!(
                "GET deployment {}/{}",
                kyverno::NAMESPACE,
                kyverno::DEPLOYMENTS[0]
            )
        })?;
    let Some(d) = d else { return Ok(None) };
    let image = d
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|p| {
            p.containers
                .into_iter()
                .find(|c| c.name == lab::cri::ADMISSION_CONTAINER)
        })
        .and_then(|c| c.image)
        .with_context(|| {
            format!(
                "deployment {}/{} has no container {:?} with an image",
                kyverno::NAMESPACE,
                kyverno::DEPLOYMENTS[0],
                lab::cri::ADMISSION_CONTAINER
            )
        })?;
    Ok(Some(image))
}

/// Checks the Kyverno admission image's tag against [`PINNED_KYVERNO`]; returns the tag.
pub fn check_kyverno_image(image: &str, allow_other_versions: bool) -> Result<String> {
    let tag = image_tag(image).unwrap_or("").to_string();
    if tag != PINNED_KYVERNO && !allow_other_versions {
        bail!(
            "Kyverno's admission controller runs image {image} (tag {tag:?}), not the pinned {PINNED_KYVERNO}; the labs' expectations hold for {PINNED_KYVERNO}. Pass --allow-other-versions to run anyway (the versions are recorded in backend.json)"
        );
    }
    Ok(tag)
}

/// Checks `/version`'s `gitVersion` against [`PINNED_KUBERNETES`].
pub fn check_kubernetes(git_version: &str, allow_other_versions: bool) -> Result<()> {
    if !is_pinned_kubernetes(git_version) && !allow_other_versions {
        bail!(
            "the cluster runs Kubernetes {git_version:?}, not the pinned {PINNED_KUBERNETES} (k3s {PINNED_KUBERNETES}+k3s1); pass --allow-other-versions to run anyway (the versions are recorded in backend.json)"
        );
    }
    Ok(())
}

/// Prepares the existing cluster for one lab (see the module docs) and returns its handle.
pub fn acquire(opts: &Options, name: &str) -> Result<ClusterHandle> {
    let step = Step::start(format!(
        "looking at the existing cluster ({}, CRI {})",
        opts.kubeconfig.display(),
        opts.cri_endpoint.display()
    ));
    let seen = block_on(look(opts))??;
    step.ok();
    eprintln!(
        "   Kubernetes {}, node {} ({}), CRI {}, Kyverno admission image {}",
        seen.git_version,
        seen.node_name,
        seen.node_uid,
        seen.cri_runtime,
        seen.kyverno_image.as_deref().unwrap_or("(not installed)")
    );
    check_kubernetes(&seen.git_version, opts.allow_other_versions)?;
    if seen.policy_present {
        bail!(
            "ValidatingPolicy {LAB_POLICY} already exists on this cluster: a lab already ran here, and each lab needs a fresh cluster (reset the VM, or start a new cluster)"
        );
    }
    let mut installed = false;
    let image = match &seen.kyverno_image {
        Some(image) => {
            if opts.install_kyverno {
                eprintln!(
                    "   Kyverno is already installed ({image}); --install-kyverno installs nothing"
                );
            }
            image.clone()
        }
        None if opts.install_kyverno => {
            install_kyverno(opts, name)?;
            installed = true;
            block_on(async { admission_image(&client(&opts.kubeconfig).await?).await })??
                .context("Kyverno's admission controller Deployment is absent after helm install")?
        }
        None => bail!(
            "Kyverno is not installed on this cluster (no deployment {}/{}); pass --install-kyverno to install the pinned chart with the built Helm",
            kyverno::NAMESPACE,
            kyverno::DEPLOYMENTS[0]
        ),
    };
    let tag = check_kyverno_image(&image, opts.allow_other_versions)?;
    let answer = kyverno::wait_ready_at(&opts.kubeconfig, KYVERNO_TIMEOUT, || Ok(()))
        .context("waiting for Kyverno on the existing cluster")?;

    let step = Step::start("creating the lab namespaces (kept when present)");
    let kc = opts.kubeconfig.clone();
    let created = block_on(async {
        crate::cluster::mark::create_namespaces(client(&kc).await?, true).await
    })??;
    step.ok();

    let mark = mark(opts, name, &seen)?;
    let facts = json!({
        "backend": "kubeconfig",
        "name": name,
        "kubeconfig": opts.kubeconfig,
        "cri_endpoint": opts.cri_endpoint,
        "kubernetes": {"gitVersion": seen.git_version, "pinned": PINNED_KUBERNETES, "matches": is_pinned_kubernetes(&seen.git_version)},
        "node": {"name": seen.node_name, "uid": seen.node_uid, "info": seen.node_info},
        "cri_runtime": seen.cri_runtime,
        "kyverno": {
            "admission_image": image,
            "tag": tag,
            "pinned": PINNED_KYVERNO,
            "matches": tag == PINNED_KYVERNO,
            "installed_by_backend": installed,
            "readiness_answer": answer,
        },
        "allow_other_versions": opts.allow_other_versions,
        "namespaces_created": created,
        "lab_mark": mark,
    });
    Ok(ClusterHandle {
        backend: "kubeconfig",
        name: name.to_string(),
        kubeconfig: opts.kubeconfig.clone(),
        cri_endpoint: opts.cri_endpoint.display().to_string(),
        node_name: seen.node_name,
        node_uid: seen.node_uid,
        logs_dir: None,
        facts,
        owned: Owned::Nothing,
    })
}

/// `helm install` of the assembled chart with the built Helm (both from the upstream cache, built
/// when missing), then the same readiness wait as the embedded backend.
fn install_kyverno(opts: &Options, name: &str) -> Result<()> {
    let inputs = crate::cluster::Inputs::resolve()
        .context("the built Helm and the assembled Kyverno chart")?;
    let chart = inputs
        .chart_dir
        .as_ref()
        .context("the upstream build gave no Kyverno chart")?;
    let helm_home = super::state_dir(&format!("kubeconfig-{name}"))?.join("helm");
    kyverno::helm_install_at(
        &inputs.bin_dir.join("helm"),
        &opts.kubeconfig,
        chart,
        &helm_home,
    )
}

/// The lab mark: put it with `--mark-as-lab` (kept when it is already there), else only report.
fn mark(opts: &Options, name: &str, seen: &Seen) -> Result<serde_json::Value> {
    let kc = opts.kubeconfig.clone();
    let existing = block_on(async {
        let lc = lab::cluster::Cluster::connect(Some(&kc))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::Ok(lc.lab_mark().await.ok())
    })??;
    if let Some(m) = existing {
        eprintln!(
            "   the cluster already carries the lab mark ({}, uid {})",
            m.object, m.uid
        );
        return Ok(json!({"present": true, "put_by_backend": false, "data": m.data}));
    }
    if !opts.mark_as_lab {
        eprintln!(
            " ! no lab mark on this cluster and --mark-as-lab not given: every fault (lab A act 5, lab B acts 5-6) will be refused here"
        );
        return Ok(json!({"present": false, "put_by_backend": false}));
    }
    let step = Step::start("putting the lab mark (--mark-as-lab)");
    let (node, uid) = (seen.node_name.clone(), seen.node_uid.clone());
    block_on(async {
        crate::cluster::mark::put_mark(client(&kc).await?, name, &node, &uid, "kubeconfig").await
    })??;
    step.ok();
    Ok(json!({"present": true, "put_by_backend": true}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_versions_are_refused_unless_allowed() {
        let e = check_kubernetes("v1.34.2+k3s1", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v1.34.2+k3s1") && e.contains("--allow-other-versions"),
            "{e}"
        );
        check_kubernetes("v1.34.2+k3s1", true).unwrap();
        check_kubernetes("v1.35.8+k3s1", false).unwrap();
        let e = check_kyverno_image("reg.kyverno.io/kyverno/kyverno:v1.19.2", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("v1.19.2") && e.contains("--allow-other-versions"),
            "{e}"
        );
        assert_eq!(
            check_kyverno_image("reg.kyverno.io/kyverno/kyverno:v1.19.2", true).unwrap(),
            "v1.19.2"
        );
        assert_eq!(
            check_kyverno_image("reg.kyverno.io/kyverno/kyverno:v1.19.1", false).unwrap(),
            "v1.19.1"
        );
    }

    #[test]
    fn missing_paths_name_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kc.yaml");
        if !Path::new(K3S_CRI_ENDPOINT).exists() {
            let e = Options::resolve(Some(&kc), None, false, false, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains("--cri-endpoint"), "{e}");
        }
        let o = Options::resolve(
            Some(&kc),
            Some(Path::new("unix:///x.sock")),
            true,
            false,
            false,
        )
        .unwrap();
        assert_eq!(o.kubeconfig, kc);
        assert!(o.install_kyverno && !o.mark_as_lab);
    }
}
