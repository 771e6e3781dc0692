//! Images into containerd, Kyverno by Helm from the assembled chart, and the wait until its admission webhook answers.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use xshell::cmd;

use super::config::Runtime;
use super::ready::{block_on, client, wait};
use crate::status::Step;

/// Helm release name and namespace (as Kyverno's own install.yaml uses them).
pub const RELEASE: &str = "kyverno";
/// Namespace Kyverno is installed into.
pub const NAMESPACE: &str = "kyverno";

/// The four Kyverno controllers' Deployments for release `kyverno` (chart 3.9.1's names).
pub const DEPLOYMENTS: [&str; 4] = [
    "kyverno-admission-controller",
    "kyverno-background-controller",
    "kyverno-cleanup-controller",
    "kyverno-reports-controller",
];

/// Helm value overrides for the offline install: `(key, value, reason)`.
///
/// Empty on purpose: chart 3.9.1's defaults already work offline. Every image's `pullPolicy`
/// defaults to `IfNotPresent` (`values.yaml`: admissionController.container.image, initContainer
/// falls back to it, background/cleanup/reports controllers), and the images are imported into
/// containerd under the exact names the chart renders, so nothing is pulled. The chart's hooks
/// (`crds.migration`: post-upgrade; `webhooksCleanup`: pre-delete) never run on `helm install`,
/// and `reportsServer`/`openreports` are disabled by default. Keep any future override here with
/// its reason; the README lists this table.
pub const HELM_VALUE_OVERRIDES: &[(&str, &str, &str)] = &[];

/// An OCI image archive to import: the reference it carries and its tar file.
#[derive(Debug, Clone)]
pub struct ImageInput {
    /// Image reference, e.g. `registry.k8s.io/pause:3.10.1`.
    pub reference: String,
    /// Tar archive (OCI image layout) accepted by `ctr images import`.
    pub path: PathBuf,
}

/// Runs `cmd` ([`crate::command::run`]); its stdout and stderr when it succeeds.
fn run(cmd: impl Into<Command>, what: &str) -> Result<String> {
    let out = crate::command::run(cmd).with_context(|| what.to_string())?;
    Ok(out.text())
}

/// Imports every image into containerd's `k8s.io` namespace with the built `ctr`, all at once
/// (one `ctr images import` per archive, side by side: each is mostly unpacking, about 1 s, and
/// they do not depend on each other), then checks that containerd lists each reference.
pub fn import_images(rt: &Runtime, images: &[ImageInput]) -> Result<()> {
    let sock = rt.containerd_socket();
    let step = Step::start(format!("importing {} images", images.len()));
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = images
            .iter()
            .map(|img| {
                let sock = &sock;
                scope.spawn(crate::status::with_label(move || {
                    let (ctr, path) = (rt.bin("ctr"), &img.path);
                    let sh = crate::command::shell()?;
                    run(
                        cmd!(sh, "{ctr} -a {sock} -n k8s.io images import {path}"),
                        &format!("importing {} from {}", img.reference, img.path.display()),
                    )
                }))
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("an image import thread panicked"))??;
        }
        Ok(())
    })?;
    let ctr = rt.bin("ctr");
    let sh = crate::command::shell()?;
    let list = run(
        cmd!(sh, "{ctr} -a {sock} -n k8s.io images ls -q"),
        "listing images",
    )?;
    for img in images {
        if !list.lines().any(|l| l.trim() == img.reference) {
            bail!(
                "after importing {} containerd's k8s.io namespace does not list {}; it lists:\n{list}",
                img.path.display(),
                img.reference
            );
        }
    }
    step.ok();
    Ok(())
}

/// `helm install kyverno <chart> -n kyverno --create-namespace` with the built Helm, against the
/// user's kubeconfig; Helm's own caches and config under the state dir.
pub fn helm_install(rt: &Runtime, chart_dir: &Path) -> Result<()> {
    helm_install_at(
        &rt.bin("helm"),
        &rt.user_kubeconfig(),
        chart_dir,
        &rt.path("helm"),
    )
}

/// [`helm_install`] against any cluster: `helm` (the built Helm binary) installs release
/// [`RELEASE`] from `chart_dir` into [`NAMESPACE`] of the cluster behind `kubeconfig`, with
/// [`HELM_VALUE_OVERRIDES`]; Helm's caches and config go under `helm_home` (cache/, config/,
/// data/, and kube-cache/ for the API discovery cache, which client-go's `genericclioptions`
/// otherwise writes to `~/.kube/cache`: cli-runtime v0.37.0 `getDefaultCacheDir` reads
/// `KUBECACHEDIR`). Used by the embedded backend and by the kubeconfig backend (`xtask::backend`).
pub fn helm_install_at(
    helm: &Path,
    kubeconfig: &Path,
    chart_dir: &Path,
    helm_home: &Path,
) -> Result<()> {
    let step = Step::start(format!("helm install {RELEASE} {}", chart_dir.display()));
    let mut cmd = Command::new(helm);
    cmd.args(["install", RELEASE])
        .arg(chart_dir)
        .args(["-n", NAMESPACE, "--create-namespace", "--kubeconfig"])
        .arg(kubeconfig)
        .env("HELM_CACHE_HOME", helm_home.join("cache"))
        .env("HELM_CONFIG_HOME", helm_home.join("config"))
        .env("HELM_DATA_HOME", helm_home.join("data"))
        .env("KUBECACHEDIR", helm_home.join("kube-cache"));
    for (k, v, _) in HELM_VALUE_OVERRIDES {
        cmd.arg("--set").arg(format!("{k}={v}"));
    }
    crate::status::line(&format!("   running {}", crate::command::pretty(&cmd)));
    run(cmd, "helm install")?;
    step.ok();
    Ok(())
}

/// Whether Deployment `name` in [`NAMESPACE`] has all its replicas Ready at its current
/// generation; the error says what it has.
async fn deployment_ready(api: &Api<Deployment>, name: &str) -> Result<()> {
    let d = api
        .get_opt(name)
        .await
        .with_context(|| format!("GET deployment {NAMESPACE}/{name}"))?
        .with_context(|| format!("{name}: not found"))?;
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let st = d.status.unwrap_or_default();
    let ready = st.ready_replicas.unwrap_or(0);
    if ready < want || st.observed_generation < d.metadata.generation {
        bail!("{name}: {ready}/{want} ready");
    }
    Ok(())
}

/// What the labs need of Kyverno, checked together: the admission controller's Deployment
/// Ready and its webhook answering ([`webhook_answers`]). The background, cleanup and reports
/// controllers ([`DEPLOYMENTS`] 1..) are not waited for: no act uses them.
async fn admission_ready(kc: &Path) -> Result<String> {
    let c = client(kc).await?;
    let api: Api<Deployment> = Api::namespaced(c, NAMESPACE);
    deployment_ready(&api, DEPLOYMENTS[0]).await?;
    webhook_answers(kc).await
}

/// The message of the span [`record_admission_start`] adds for Kyverno's own start (the bench
/// reads it as the floor of `cluster up`).
pub const KYVERNO_START_SPAN: &str =
    "Kyverno's own start (admission controller pod created → Ready, from its conditions)";

/// Adds the admission controller pod's own start to the bench's recording
/// ([`KYVERNO_START_SPAN`]): its `creationTimestamp` → its `Ready` condition's
/// `lastTransitionTime` (both 1 s resolution, from the API server). Best effort: a failed read
/// only prints a note.
pub fn record_admission_start(kubeconfig: &Path) {
    let kc = kubeconfig.to_path_buf();
    let got = block_on(async move {
        let c = client(&kc).await?;
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(c, NAMESPACE);
        let list = pods
            .list(&ListParams::default().labels(lab::cluster::ADMISSION_POD_SELECTOR))
            .await
            .context("listing the admission controller pods")?;
        let pod = list
            .items
            .into_iter()
            .next()
            .context("no admission controller pod")?;
        let created = pod
            .metadata
            .creation_timestamp
            .context("no creationTimestamp")?
            .0
            .as_millisecond();
        let ready = pod
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready" && c.status == "True")
            .and_then(|c| c.last_transition_time)
            .context("no Ready=True condition")?
            .0
            .as_millisecond();
        let utc = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms).context("a timestamp out of range")
        };
        anyhow::Ok((utc(created)?, utc(ready)?))
    });
    match got.and_then(|r| r) {
        Ok((a, b)) => {
            crate::status_line!(
                "   Kyverno's admission controller pod: created → Ready {:.0}s (its conditions)",
                (b - a).num_milliseconds() as f64 / 1000.0
            );
            crate::status::record_span(KYVERNO_START_SPAN, a, b);
        }
        Err(e) => {
            crate::status_line!("   note: Kyverno's admission controller start not read: {e:#}")
        }
    }
}

/// Evidence that Kyverno's admission webhook answers: the webhook configurations exist, `kyverno-svc`
/// has a ready endpoint, and a server dry-run create of a ValidatingPolicy whose CEL expression
/// does not compile is denied by Kyverno's policy webhook (an explicit answer, not a timeout).
async fn webhook_answers(kc: &Path) -> Result<String> {
    let c = client(kc).await?;
    let vwc: Api<ValidatingWebhookConfiguration> = Api::all(c.clone());
    for name in [
        "kyverno-policy-validating-webhook-cfg",
        "kyverno-resource-validating-webhook-cfg",
    ] {
        vwc.get_opt(name)
            .await
            .with_context(|| format!("GET {name}"))?
            .with_context(|| format!("{name} does not exist yet"))?;
    }
    let slices: Api<EndpointSlice> = Api::namespaced(c.clone(), NAMESPACE);
    let list = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=kyverno-svc"))
        .await
        .context("listing kyverno-svc EndpointSlices")?;
    let ready = list
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true));
    if !ready {
        bail!("kyverno-svc has no ready endpoint yet");
    }
    let gvk = GroupVersionKind::gvk("policies.kyverno.io", "v1", "ValidatingPolicy");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "validatingpolicies");
    let api: Api<DynamicObject> = Api::all_with(c, &ar);
    let probe: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "kca-webhook-lab-readiness-probe"},
        "spec": {
            "validationActions": ["Deny"],
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "this is not CEL ((("}]
        }
    }))
    .context("building the readiness probe policy")?;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    match api.create(&pp, &probe).await {
        Ok(_) => bail!(
            "server dry-run create of an invalid ValidatingPolicy was admitted: Kyverno's policy webhook did not check it"
        ),
        Err(kube::Error::Api(s))
            if s.message.contains("admission webhook")
                && s.message.contains("denied the request") =>
        {
            Ok(s.message)
        }
        Err(e) => Err(e).context("server dry-run create of the readiness probe ValidatingPolicy"),
    }
}

/// Waits (bounded) until Kyverno's admission controller is Ready and its webhook answers
/// (`admission_ready`; polled every 0.5 s). Returns Kyverno's deny message for the probe.
pub fn wait_ready(
    rt: &Runtime,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Clone,
) -> Result<String> {
    wait_ready_at(&rt.user_kubeconfig(), timeout, alive)
}

/// [`wait_ready`] for the cluster behind `kubeconfig` (any backend).
pub fn wait_ready_at(
    kubeconfig: &Path,
    timeout: Duration,
    alive: impl FnMut() -> Result<()> + Clone,
) -> Result<String> {
    let kc = kubeconfig.to_path_buf();
    wait(
        "Kyverno's admission controller Ready and its webhook answering",
        timeout,
        Duration::from_millis(500),
        alive,
        || block_on(admission_ready(&kc))?,
    )
}
