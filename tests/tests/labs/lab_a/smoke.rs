//! The smoke rows of the shared lab A cluster (`lab_a.rs`; formerly the `cluster_smoke` binary on
//! a cluster of its own): lab B's ValidatingPolicy (labs.md act 2, the same object as lab A's act
//! 2) registers Kyverno's fine-grained webhook, and the real admission chain stores or denies pods
//! as Kyverno v1.19.1 decides, all seen through the test's own kube client (not the lab's code).
//! The row then deletes its policy and pods and waits until the registration is gone, so lab A's
//! act 2 starts from a cluster without the policy. A second `up` of the running cluster is refused
//! and tears nothing down.
//!
//! Needs Linux and root; fails (never skips) otherwise.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use serde_json::json;
use tests::LabCluster;
use xtask::cluster::config::{PAUSE_IMAGE, default_state_root};
use xtask::cluster::mark::{CONTROL_NAMESPACE, TARGET_NAMESPACE};

/// The webhook Kyverno registers for the policy (failurePolicy Fail).
const WEBHOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
/// The configuration Kyverno puts it in.
const WEBHOOK_CFG: &str = "kyverno-resource-validating-webhook-cfg";
/// The policy's marker in a deny.
const MESSAGE: &str = "KCA_ENVIRONMENT_REQUIRED";

/// Lab B's policy, act 2 of `labs.md`.
fn policy() -> serde_json::Value {
    json!({
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "ValidatingPolicy",
        "metadata": {"name": "kca-webhook-label"},
        "spec": {
            "validationActions": ["Deny"],
            "failurePolicy": "Fail",
            "webhookConfiguration": {"timeoutSeconds": 3},
            "evaluation": {"background": {"enabled": false}},
            "matchConstraints": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": TARGET_NAMESPACE}},
                "resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]
                }]
            },
            "validations": [{
                "expression": "'environment' in object.metadata.?labels.orValue({})",
                "message": MESSAGE
            }]
        }
    })
}

fn pod(name: &str, labels: Option<BTreeMap<&str, &str>>) -> Result<Pod> {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "pause", "image": PAUSE_IMAGE, "imagePullPolicy": "IfNotPresent"}]
        }
    });
    if let Some(l) = labels {
        v["metadata"]["labels"] = json!(l);
    }
    serde_json::from_value(v).context("building a pod")
}

async fn wait_for<T, F, Fut>(what: &str, bound: Duration, mut f: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let t = Instant::now();
    let mut last = anyhow::anyhow!("no attempt");
    while t.elapsed() < bound {
        match f().await {
            Ok(v) => {
                eprintln!("   {what}: after {:.1}s", t.elapsed().as_secs_f64());
                return Ok(v);
            }
            Err(e) => last = e,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    bail!(
        "{what}: not within {}s; last error: {last:#}",
        bound.as_secs()
    )
}

/// The policy, its registration, and a stored / denied / stored pod (see the module docs).
pub async fn scenario(c: &LabCluster) -> Result<()> {
    let client = xtask::cluster::ready::client(&c.kubeconfig()).await?;

    // The policy.
    let gvk = GroupVersionKind::gvk("policies.kyverno.io", "v1", "ValidatingPolicy");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "validatingpolicies");
    let vpols: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let obj: DynamicObject = serde_json::from_value(policy()).context("policy JSON")?;
    let created = vpols
        .create(&PostParams::default(), &obj)
        .await
        .context("creating ValidatingPolicy kca-webhook-label")?;
    eprintln!("   policy stored, uid {:?}", created.metadata.uid);

    // Kyverno registers the fine-grained webhook with the policy's timeout and namespaceSelector.
    let vwc: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let hook = wait_for(
        &format!("webhook {WEBHOOK} in {WEBHOOK_CFG}"),
        Duration::from_secs(90),
        || {
            let vwc = vwc.clone();
            async move {
                let cfg = vwc
                    .get(WEBHOOK_CFG)
                    .await
                    .with_context(|| format!("GET {WEBHOOK_CFG}"))?;
                let names: Vec<String> = cfg
                    .webhooks
                    .iter()
                    .flatten()
                    .map(|w| w.name.clone())
                    .collect();
                cfg.webhooks
                    .unwrap_or_default()
                    .into_iter()
                    .find(|w| w.name == WEBHOOK)
                    .with_context(|| format!("{WEBHOOK_CFG} has webhooks {names:?}"))
            }
        },
    )
    .await?;
    eprintln!(
        "   registered webhook: {}",
        serde_json::to_string(&hook).unwrap_or_default()
    );
    ensure!(
        hook.timeout_seconds == Some(3),
        "timeoutSeconds is {:?}, expected 3",
        hook.timeout_seconds
    );
    ensure!(
        hook.failure_policy.as_deref() == Some("Fail"),
        "failurePolicy is {:?}",
        hook.failure_policy
    );
    let sel = hook.namespace_selector.clone().unwrap_or_default();
    ensure!(
        sel.match_labels
            .as_ref()
            .and_then(|m| m.get("kubernetes.io/metadata.name"))
            .map(String::as_str)
            == Some(TARGET_NAMESPACE),
        "namespaceSelector {sel:?} lacks the policy's matchLabels kubernetes.io/metadata.name={TARGET_NAMESPACE}"
    );

    // The default ServiceAccounts exist (ServiceAccount admission needs them).
    for ns in [TARGET_NAMESPACE, CONTROL_NAMESPACE] {
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
        wait_for(
            &format!("ServiceAccount {ns}/default"),
            Duration::from_secs(60),
            || {
                let sas = sas.clone();
                async move { sas.get("default").await.map(|_| ()).context("GET default") }
            },
        )
        .await?;
    }

    let target: Api<Pod> = Api::namespaced(client.clone(), TARGET_NAMESPACE);
    let control: Api<Pod> = Api::namespaced(client.clone(), CONTROL_NAMESPACE);

    // The apiserver picks up a new webhook configuration through an informer: wait (bounded)
    // until a server dry-run of the unlabelled pod is denied, before the real requests.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let unlabelled = pod("kca-smoke-unlabelled", None)?;
    wait_for(
        "the webhook active in the apiserver (dry-run denied)",
        Duration::from_secs(60),
        || {
            let (target, dry, p) = (target.clone(), dry.clone(), unlabelled.clone());
            async move {
                match target.create(&dry, &p).await {
                    Err(kube::Error::Api(s)) if s.message.contains(MESSAGE) => Ok(()),
                    Err(e) => Err(anyhow::Error::from(e)),
                    Ok(_) => bail!("dry-run admitted"),
                }
            }
        },
    )
    .await?;

    // A labelled pod in the target namespace: stored (GET returns it with its UID) and Running.
    let labelled = pod(
        "kca-smoke-labelled",
        Some(BTreeMap::from([("environment", "dev")])),
    )?;
    let made = target
        .create(&PostParams::default(), &labelled)
        .await
        .context("creating the labelled pod")?;
    let got = target
        .get("kca-smoke-labelled")
        .await
        .context("GET the labelled pod")?;
    ensure!(
        got.metadata.uid.is_some() && got.metadata.uid == made.metadata.uid,
        "labelled pod UID mismatch"
    );
    eprintln!("   labelled pod stored, uid {:?}", got.metadata.uid);
    wait_for("labelled pod Running", Duration::from_secs(120), || {
        let target = target.clone();
        async move {
            let p = target.get("kca-smoke-labelled").await?;
            let phase = p.status.and_then(|s| s.phase).unwrap_or_default();
            ensure!(phase == "Running", "phase {phase:?}");
            Ok(())
        }
    })
    .await?;

    // An unlabelled pod in the target namespace: Kyverno's explicit deny, and not stored.
    match target.create(&PostParams::default(), &unlabelled).await {
        Ok(p) => bail!(
            "unlabelled pod in {TARGET_NAMESPACE} was admitted (uid {:?})",
            p.metadata.uid
        ),
        Err(kube::Error::Api(s)) => {
            eprintln!(
                "   unlabelled pod denied: HTTP {} {}: {}",
                s.code, s.reason, s.message
            );
            ensure!(
                s.message.contains(MESSAGE),
                "deny message lacks {MESSAGE}: {}",
                s.message
            );
            ensure!(
                s.message.contains(&format!(
                    "admission webhook \"{WEBHOOK}\" denied the request"
                )),
                "not Kyverno's explicit deny: {}",
                s.message
            );
        }
        Err(e) => return Err(e).context("creating the unlabelled pod"),
    }
    match target
        .get_opt("kca-smoke-unlabelled")
        .await
        .context("GET the unlabelled pod")?
    {
        None => eprintln!("   unlabelled pod: GET 404 (not stored)"),
        Some(p) => bail!("denied pod is stored (uid {:?})", p.metadata.uid),
    }

    // An unlabelled pod in the control namespace: stored.
    let made = control
        .create(&PostParams::default(), &pod("kca-smoke-control", None)?)
        .await
        .context("creating the unlabelled pod in the control namespace")?;
    let got = control
        .get("kca-smoke-control")
        .await
        .context("GET the control pod")?;
    ensure!(
        got.metadata.uid.is_some() && got.metadata.uid == made.metadata.uid,
        "control pod UID mismatch"
    );
    eprintln!("   control pod stored, uid {:?}", got.metadata.uid);

    Ok(())
}

/// Puts the cluster back as lab A's act 1 expects it, whatever [`scenario`] got to: deletes the
/// smoke pods and the policy, then waits (bounded) until the policy, the pods and the policy's
/// webhook registration are gone. Errors name what was still there.
pub async fn cleanup(c: &LabCluster) -> Result<()> {
    delete_policy_and_wait(
        c,
        &[
            (TARGET_NAMESPACE, "kca-smoke-labelled"),
            (TARGET_NAMESPACE, "kca-smoke-unlabelled"),
            (CONTROL_NAMESPACE, "kca-smoke-control"),
        ],
    )
    .await
}

/// Deletes the ValidatingPolicy `kca-webhook-label` (every lab's policy) and the pods `pods`
/// (namespace, name), then waits (bounded, 90 s) until they and the policy's webhook
/// registration are gone. A 404 on delete is fine; errors name what was still there.
pub async fn delete_policy_and_wait(c: &LabCluster, pods: &[(&str, &str)]) -> Result<()> {
    let client = xtask::cluster::ready::client(&c.kubeconfig()).await?;
    let gvk = GroupVersionKind::gvk("policies.kyverno.io", "v1", "ValidatingPolicy");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "validatingpolicies");
    let vpols: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let vwc: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let pod_apis: Vec<(Api<Pod>, String)> = pods
        .iter()
        .map(|(ns, name)| (Api::namespaced(client.clone(), ns), (*name).to_owned()))
        .collect();
    let _ = vpols
        .delete("kca-webhook-label", &DeleteParams::default())
        .await;
    for (api, name) in &pod_apis {
        let _ = api.delete(name, &DeleteParams::default()).await;
    }
    wait_for(
        "the policy kca-webhook-label, its webhook registration and the pods gone",
        Duration::from_secs(90),
        || {
            let (vpols, vwc, pod_apis) = (vpols.clone(), vwc.clone(), pod_apis.clone());
            async move {
                let mut left = Vec::new();
                if vpols.get_opt("kca-webhook-label").await?.is_some() {
                    left.push("policy kca-webhook-label".to_owned());
                }
                for (api, name) in &pod_apis {
                    if api.get_opt(name).await?.is_some() {
                        left.push(format!("pod {name}"));
                    }
                }
                if let Some(cfg) = vwc.get_opt(WEBHOOK_CFG).await?
                    && cfg.webhooks.iter().flatten().any(|w| w.name == WEBHOOK)
                {
                    left.push(format!("webhook {WEBHOOK}"));
                }
                ensure!(left.is_empty(), "still there: {}", left.join(", "));
                Ok(())
            }
        },
    )
    .await
}

/// A second `up` of the running cluster's name through the lab run's path
/// (`up_with_diagnostics`) is refused, and the refusal tears nothing down: the running cluster
/// is another process's (here the fixture's), not this `up`'s (rule: delete only what we made).
/// Embedded backend only (it reads the cluster's record).
pub fn refused_up_leaves_the_running_cluster(
    cluster: &LabCluster,
    rt: &tokio::runtime::Runtime,
) -> Result<()> {
    let name = cluster.cluster().name().to_owned();
    let created = cluster.cluster().record().created_at.clone();
    let diag = tempfile::tempdir()?;
    let mut opts = xtask::cluster::UpOptions::new(&name);
    opts.state_root = default_state_root();
    let second = xtask::lab_run::diagnostics::up_with_diagnostics(opts, diag.path());
    ensure!(
        second.is_err(),
        "a second up of the running cluster {name} was not refused"
    );
    let again = xtask::cluster::Cluster::load(&name, &default_state_root())?
        .with_context(|| format!("the record of {name} is gone after the refused up"))?;
    ensure!(
        again.record().created_at == created,
        "the record of {name} changed: created {created}, now {}",
        again.record().created_at
    );
    let client = rt.block_on(xtask::cluster::ready::client(&cluster.kubeconfig()))?;
    let version = rt.block_on(client.apiserver_version()).with_context(|| {
        format!("the API server of {name} no longer answers after the refused up")
    })?;
    eprintln!(
        "   refused up left {name} running (API server {})",
        version.git_version
    );
    Ok(())
}
