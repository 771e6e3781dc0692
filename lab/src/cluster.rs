//! The only module that talks to the Kubernetes API server (kube-rs).
//!
//! It finds the cluster the way a student's lab VM offers it (`--kubeconfig`, else k3s's
//! `/etc/rancher/k3s/k3s.yaml` when it exists, else `KUBECONFIG` / `~/.kube/config`: one file,
//! [`resolve_kubeconfig`], which every helper is handed), and offers
//! small typed helpers for what the acts read and change: the node, namespaces, the admission
//! controller's Deployment, pods and Lease, the lab's ValidatingPolicy (as a `DynamicObject` of
//! `policies.kyverno.io/v1`), ValidatingWebhookConfigurations, and the lab mark.
//!
//! Pod creates used as probes go through [`Cluster::create_pod_raw`], which returns the HTTP
//! answer verbatim (status code and body) instead of kube-rs's parsed error, because evidence
//! keeps the raw answer first and classifies it afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingWebhook, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// k3s's kubeconfig: the default on a student's lab VM.
pub const K3S_KUBECONFIG: &str = "/etc/rancher/k3s/k3s.yaml";
/// Namespace of the Kyverno installation.
pub const KYVERNO_NAMESPACE: &str = "kyverno";
/// The admission controller's Deployment.
pub const ADMISSION_DEPLOYMENT: &str = "kyverno-admission-controller";
/// Label selector of the admission controller's pods (chart 3.9.x).
pub const ADMISSION_POD_SELECTOR: &str = "app.kubernetes.io/component=admission-controller";
/// Kyverno's leader-election Lease (`$KYVERNO_NAMESPACE/kyverno`, kyverno `pkg/leaderelection`).
pub const LEADER_LEASE: &str = lab_core::rules::common::LEADER_LEASE;
/// The ValidatingWebhookConfiguration that holds every ValidatingPolicy webhook (kyverno
/// `pkg/controllers/webhook`).
pub const RESOURCE_WEBHOOK_CONFIG: &str = "kyverno-resource-validating-webhook-cfg";
/// The lab's policy name.
pub const POLICY_NAME: &str = "kca-webhook-label";
/// Namespace of the lab mark ConfigMap.
pub const MARK_NAMESPACE: &str = "kube-system";
/// Name of the lab mark ConfigMap.
pub const MARK_NAME: &str = "kca-webhook-lab";
/// Data key of the mark.
pub const MARK_KEY: &str = "mark";
/// The mark's value: a cluster without this exact ConfigMap value is never disturbed.
pub const MARK_VALUE: &str = "kca-webhook-lab/v1";

/// The `policies.kyverno.io/v1` ValidatingPolicy resource (cluster scoped).
pub fn validating_policy_resource() -> ApiResource {
    ApiResource {
        group: "policies.kyverno.io".into(),
        version: "v1".into(),
        api_version: "policies.kyverno.io/v1".into(),
        kind: "ValidatingPolicy".into(),
        plural: "validatingpolicies".into(),
    }
}

/// The one kubeconfig file the tool uses, and hands to every helper it starts (lab A's healer
/// reads [`Cluster::kubeconfig`]), so the two never talk to different clusters: `flag` when
/// given; else [`K3S_KUBECONFIG`] when it exists; else kubectl's file: the one file `KUBECONFIG`
/// names, or `~/.kube/config` when `KUBECONFIG` is unset or empty. `None` when there is no single
/// file: `KUBECONFIG` names several (kube-rs merges them, and no one file holds the merge), or
/// none exists; then [`Cluster::connect`] uses kube-rs's own inference and a helper that needs a
/// file is refused.
pub fn resolve_kubeconfig(flag: Option<&Path>) -> Option<PathBuf> {
    kubeconfig_file(
        flag,
        std::env::var_os("KUBECONFIG"),
        std::env::var_os("HOME").map(PathBuf::from),
        |p| p.is_file(),
    )
}

/// [`resolve_kubeconfig`]'s decision, given `$KUBECONFIG`, `$HOME` and which paths are files
/// (pure).
fn kubeconfig_file(
    flag: Option<&Path>,
    env: Option<std::ffi::OsString>,
    home: Option<PathBuf>,
    is_file: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    let k3s = PathBuf::from(K3S_KUBECONFIG);
    if is_file(&k3s) {
        return Some(k3s);
    }
    let listed: Vec<PathBuf> = env
        .filter(|v| !v.is_empty())
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let file = match listed.as_slice() {
        [] => home?.join(".kube/config"),
        [one] => one.clone(),
        _ => return None,
    };
    is_file(&file).then_some(file)
}

/// The cluster's single node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeIdentity {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid`.
    pub uid: String,
}

/// What the lab mark ConfigMap holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabMark {
    /// `namespace/name` of the ConfigMap.
    pub object: String,
    /// Its UID.
    pub uid: String,
    /// Its `data`, verbatim.
    pub data: BTreeMap<String, String>,
}

/// One HTTP answer of the API server, verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawAnswer {
    /// HTTP status code.
    pub http_status: u16,
    /// The body parsed as JSON, or a JSON string holding the text when it is not JSON.
    pub body: serde_json::Value,
    /// When the request was sent, RFC 3339 UTC (ms).
    pub sent_at: String,
    /// When the answer's body had been read, RFC 3339 UTC (ms).
    pub answered_at: String,
    /// Time between the two, milliseconds (monotonic clock).
    pub elapsed_ms: u64,
}

/// The answer to [`Cluster::replace_deployment_scale`].
#[derive(Debug, Clone)]
pub enum ScaleWrite {
    /// Written: the scale object the API server answered with.
    Written(Box<Scale>),
    /// 409 Conflict: the scale changed since it was read; nothing was written.
    Conflict,
}

/// A client of one cluster.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
    kubeconfig: Option<PathBuf>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("kubeconfig", &self.kubeconfig)
            .finish()
    }
}

impl Cluster {
    /// Builds a client from `kubeconfig` (see [`resolve_kubeconfig`] for the default) and checks
    /// that the API server answers (`/version`).
    ///
    /// Errors: [`LabError::ClusterUnreachable`] naming the kubeconfig.
    pub async fn connect(kubeconfig: Option<&Path>) -> Result<Cluster, LabError> {
        let path = resolve_kubeconfig(kubeconfig);
        let unreachable = |detail: String| LabError::ClusterUnreachable {
            kubeconfig: path.clone(),
            detail,
        };
        let config = match &path {
            Some(p) => {
                let kc = Kubeconfig::read_from(p)
                    .map_err(|e| unreachable(format!("reading kubeconfig: {e}")))?;
                Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| unreachable(format!("loading kubeconfig: {e}")))?
            }
            None => Config::infer()
                .await
                .map_err(|e| unreachable(format!("finding a kubeconfig: {e}")))?,
        };
        let client = Client::try_from(config)
            .map_err(|e| unreachable(format!("building the client: {e}")))?;
        client
            .apiserver_version()
            .await
            .map_err(|e| unreachable(error_chain(&e)))?;
        Ok(Cluster {
            client,
            kubeconfig: path,
        })
    }

    /// Builds a client the way kubectl finds one (`audit`, also as a kubectl plugin):
    /// `kubeconfig` when given, else `KUBECONFIG` / `~/.kube/config` / in-cluster (kube-rs's
    /// inference), else k3s's [`K3S_KUBECONFIG`]; `context` instead of the current context.
    /// Checks that the API server answers (`/version`).
    ///
    /// Errors: [`LabError::ClusterUnreachable`] naming the kubeconfig.
    pub async fn connect_as_kubectl(
        kubeconfig: Option<&Path>,
        context: Option<&str>,
    ) -> Result<Cluster, LabError> {
        let options = KubeConfigOptions {
            context: context.map(str::to_owned),
            ..Default::default()
        };
        let unreachable = |path: Option<PathBuf>, detail: String| LabError::ClusterUnreachable {
            kubeconfig: path,
            detail,
        };
        let (config, path) = match kubeconfig {
            Some(p) => config_from_file(p.to_path_buf(), &options).await?,
            None => match Config::from_kubeconfig(&options).await {
                Ok(c) => (c, None),
                Err(inferred) => {
                    let k3s = PathBuf::from(K3S_KUBECONFIG);
                    if k3s.exists() {
                        config_from_file(k3s, &options).await?
                    } else {
                        match Config::incluster() {
                            Ok(c) => (c, None),
                            Err(_) => {
                                return Err(unreachable(
                                    None,
                                    format!("finding a kubeconfig: {inferred}"),
                                ));
                            }
                        }
                    }
                }
            },
        };
        let client = Client::try_from(config)
            .map_err(|e| unreachable(path.clone(), format!("building the client: {e}")))?;
        client
            .apiserver_version()
            .await
            .map_err(|e| unreachable(path.clone(), error_chain(&e)))?;
        Ok(Cluster {
            client,
            kubeconfig: path,
        })
    }

    /// `GET path` as a LIST (with `labelSelector` when given): the List object exactly as the API
    /// server returned it (its body parsed as JSON). Read-only.
    ///
    /// Errors: [`LabError::Kube`] with the server's answer (e.g. 403 for a LIST the credentials
    /// may not do), [`LabError::ClusterUnreachable`].
    pub async fn list_raw(
        &self,
        path: &str,
        label_selector: Option<&str>,
    ) -> Result<serde_json::Value, LabError> {
        let mut params = ListParams::default();
        if let Some(l) = label_selector {
            params = params.labels(l);
        }
        let req = kube::core::Request::new(path)
            .list(&params)
            .map_err(|e| LabError::Kube(format!("building the request: {e}")))?;
        let text = self.client.request_text(req).await.map_err(kube_err)?;
        serde_json::from_str(&text)
            .map_err(|e| LabError::Kube(format!("GET {path}: the answer is not JSON: {e}")))
    }

    /// `GET path` (a discovery document, e.g. `/apis/admissionregistration.k8s.io/v1`): its body
    /// parsed as JSON, exactly as the API server returned it; `None` when the server answers 404
    /// (the group or version is not served). Read-only (`audit`).
    ///
    /// Errors: [`LabError::Kube`] with the server's answer for any other refusal,
    /// [`LabError::ClusterUnreachable`].
    pub async fn get_raw_optional(
        &self,
        path: &str,
    ) -> Result<Option<serde_json::Value>, LabError> {
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| LabError::Kube(format!("building the request: {e}")))?;
        match self.client.request_text(req).await {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LabError::Kube(format!("GET {path}: the answer is not JSON: {e}"))),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(kube_err(e)),
        }
    }

    /// The kubeconfig in use (`None`: kube-rs's inference).
    pub fn kubeconfig(&self) -> Option<&Path> {
        self.kubeconfig.as_deref()
    }

    /// The cluster's one node. Errors: [`LabError::ClusterMismatch`] when there is not exactly one.
    pub async fn node(&self) -> Result<NodeIdentity, LabError> {
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(kube_err)?;
        if nodes.items.len() != 1 {
            return Err(LabError::ClusterMismatch {
                what: "number of nodes".into(),
                expected: "1".into(),
                found: nodes.items.len().to_string(),
            });
        }
        let n = &nodes.items[0];
        Ok(NodeIdentity {
            name: n.metadata.name.clone().unwrap_or_default(),
            uid: n.metadata.uid.clone().unwrap_or_default(),
        })
    }

    /// A namespace by name (`None`: not found).
    pub async fn namespace(&self, name: &str) -> Result<Option<Namespace>, LabError> {
        Api::<Namespace>::all(self.client.clone())
            .get_opt(name)
            .await
            .map_err(kube_err)
    }

    /// The UIDs of the namespaces named, name → UID (`None` for one that does not exist).
    pub async fn namespace_uids(
        &self,
        names: &[&str],
    ) -> Result<BTreeMap<String, Option<String>>, LabError> {
        let mut out = BTreeMap::new();
        for n in names {
            let uid = self.namespace(n).await?.and_then(|ns| ns.metadata.uid);
            out.insert((*n).to_owned(), uid);
        }
        Ok(out)
    }

    /// The admission controller's Deployment (`kyverno/kyverno-admission-controller`).
    ///
    /// Errors: [`LabError::ClusterMismatch`] when it does not exist.
    pub async fn admission_deployment(&self) -> Result<Deployment, LabError> {
        Api::<Deployment>::namespaced(self.client.clone(), KYVERNO_NAMESPACE)
            .get_opt(ADMISSION_DEPLOYMENT)
            .await
            .map_err(kube_err)?
            .ok_or_else(|| LabError::ClusterMismatch {
                what: format!("deployment {KYVERNO_NAMESPACE}/{ADMISSION_DEPLOYMENT}"),
                expected: "present".into(),
                found: "absent".into(),
            })
    }

    /// The admission controller's pods ([`ADMISSION_POD_SELECTOR`] in `kyverno`), sorted by name.
    pub async fn admission_pods(&self) -> Result<Vec<Pod>, LabError> {
        sorted_by_name(
            Api::<Pod>::namespaced(self.client.clone(), KYVERNO_NAMESPACE),
            &ListParams::default().labels(ADMISSION_POD_SELECTOR),
        )
        .await
    }

    /// A Lease (`None`: not found).
    pub async fn lease(&self, namespace: &str, name: &str) -> Result<Option<Lease>, LabError> {
        Api::<Lease>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(kube_err)
    }

    /// A pod (`None`: not found).
    pub async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Pod>, LabError> {
        Api::<Pod>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(kube_err)
    }

    /// Watches pod `namespace/name` until `cond` holds for it (`None`: the pod does not exist),
    /// with kube-runtime's `await_condition` (a watch on its name, each event checked), and
    /// returns the pod at that moment. Not bounded itself: the caller bounds it
    /// ([`crate::probe::wait_running`]).
    ///
    /// Errors: the watch fails ([`LabError::Kube`]).
    pub async fn await_pod(
        &self,
        namespace: &str,
        name: &str,
        cond: impl Fn(Option<&Pod>) -> bool,
    ) -> Result<Option<Pod>, LabError> {
        let api = Api::<Pod>::namespaced(self.client.clone(), namespace);
        kube::runtime::wait::await_condition(api, name, cond)
            .await
            .map_err(|e| {
                LabError::Kube(format!(
                    "watching pod {namespace}/{name}: {}",
                    error_chain(&e)
                ))
            })
    }

    /// Checks the lab mark (ConfigMap `kube-system/kca-webhook-lab` with `mark` =
    /// [`MARK_VALUE`]) and returns it.
    ///
    /// Errors: [`LabError::FaultRefused`] when it is missing or holds another value: this cluster
    /// is not a lab environment and no fault may be injected.
    pub async fn lab_mark(&self) -> Result<LabMark, LabError> {
        let cm = Api::<ConfigMap>::namespaced(self.client.clone(), MARK_NAMESPACE)
            .get_opt(MARK_NAME)
            .await
            .map_err(kube_err)?
            .ok_or_else(|| LabError::FaultRefused {
                reason: format!("no lab mark: ConfigMap {MARK_NAMESPACE}/{MARK_NAME} not found; this cluster is not a lab environment"),
            })?;
        let data = cm.data.clone().unwrap_or_default();
        match data.get(MARK_KEY) {
            Some(v) if v == MARK_VALUE => Ok(LabMark {
                object: format!("{MARK_NAMESPACE}/{MARK_NAME}"),
                uid: cm.metadata.uid.clone().unwrap_or_default(),
                data,
            }),
            other => Err(LabError::FaultRefused {
                reason: format!(
                    "lab mark ConfigMap {MARK_NAMESPACE}/{MARK_NAME}: data.{MARK_KEY} is {other:?}, expected {MARK_VALUE:?}"
                ),
            }),
        }
    }

    fn policies(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &validating_policy_resource())
    }

    /// The ValidatingPolicy `name` as stored, as JSON (`None`: not found).
    pub async fn policy(&self, name: &str) -> Result<Option<serde_json::Value>, LabError> {
        let obj = self.policies().get_opt(name).await.map_err(kube_err)?;
        obj.map(|o| to_json(&o)).transpose()
    }

    /// Creates the ValidatingPolicy given as JSON (the student's `policy.json`, unchanged) and
    /// returns the stored object.
    pub async fn create_policy(
        &self,
        policy: &serde_json::Value,
    ) -> Result<serde_json::Value, LabError> {
        let obj: DynamicObject = from_json(policy)?;
        let stored = self
            .policies()
            .create(&PostParams::default(), &obj)
            .await
            .map_err(kube_err)?;
        to_json(&stored)
    }

    /// Replaces the stored ValidatingPolicy's `spec` with `policy`'s (same object: `metadata` is
    /// the stored one, including `uid` and `resourceVersion`, so a concurrent change is a 409
    /// Conflict rather than a silent overwrite). Returns the stored result.
    pub async fn replace_policy_spec(
        &self,
        policy: &serde_json::Value,
    ) -> Result<serde_json::Value, LabError> {
        let name = policy
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| LabError::Kube("the policy has no metadata.name".into()))?;
        let current = self.policies().get(name).await.map_err(kube_err)?;
        let mut next = current.clone();
        next.data["spec"] = policy
            .get("spec")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let stored = self
            .policies()
            .replace(name, &PostParams::default(), &next)
            .await
            .map_err(kube_err)?;
        to_json(&stored)
    }

    /// The scale subresource of Deployment `namespace/name`
    /// (`GET …/deployments/NAME/scale`); `None` when the Deployment is not found (404).
    pub async fn deployment_scale(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Scale>, LabError> {
        match Api::<Deployment>::namespaced(self.client.clone(), namespace)
            .get_scale(name)
            .await
        {
            Ok(s) => Ok(Some(s)),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(LabError::Kube(format!(
                "reading the scale of {namespace}/{name}: {}",
                kube_err(e)
            ))),
        }
    }

    /// Replaces the scale subresource of Deployment `namespace/name` with `scale`
    /// (`PUT …/deployments/NAME/scale`; optimistic concurrency: `scale.metadata.resourceVersion`
    /// must be the live one). A 409 Conflict is [`ScaleWrite::Conflict`], for the caller to
    /// re-read and decide again; other errors are [`LabError::Kube`].
    pub async fn replace_deployment_scale(
        &self,
        namespace: &str,
        name: &str,
        scale: &Scale,
    ) -> Result<ScaleWrite, LabError> {
        match Api::<Deployment>::namespaced(self.client.clone(), namespace)
            .replace_scale(name, &PostParams::default(), scale)
            .await
        {
            Ok(s) => Ok(ScaleWrite::Written(Box::new(s))),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(ScaleWrite::Conflict),
            Err(e) => Err(kube_err(e)),
        }
    }

    /// `GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations`: the List
    /// object exactly as the API server returned it (parsed JSON of its body).
    pub async fn webhook_configurations_raw(&self) -> Result<serde_json::Value, LabError> {
        let req = kube::core::Request::new(
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        )
        .list(&ListParams::default())
        .map_err(|e| LabError::Kube(format!("building the request: {e}")))?;
        let text = self.client.request_text(req).await.map_err(kube_err)?;
        serde_json::from_str(&text).map_err(|e| {
            LabError::Kube(format!(
                "validatingwebhookconfigurations list is not JSON: {e}"
            ))
        })
    }

    /// Every ValidatingWebhookConfiguration, as stored (raw JSON list items), sorted by name.
    pub async fn webhook_configurations(
        &self,
    ) -> Result<Vec<ValidatingWebhookConfiguration>, LabError> {
        sorted_by_name(
            Api::<ValidatingWebhookConfiguration>::all(self.client.clone()),
            &ListParams::default(),
        )
        .await
    }

    /// The webhook named `webhook` in any ValidatingWebhookConfiguration: (configuration, webhook).
    pub async fn find_webhook(
        &self,
        webhook: &str,
    ) -> Result<Option<(ValidatingWebhookConfiguration, ValidatingWebhook)>, LabError> {
        Ok(find_webhook_in(
            &self.webhook_configurations().await?,
            webhook,
        ))
    }

    /// Sends one pod create (`POST /api/v1/namespaces/NS/pods`, with `dryRun=All` when `dry_run`)
    /// and returns the answer verbatim, whatever its status code.
    ///
    /// Errors: only when no HTTP answer came ([`LabError::ClusterUnreachable`] / [`LabError::Kube`]).
    pub async fn create_pod_raw(
        &self,
        namespace: &str,
        pod: &serde_json::Value,
        dry_run: bool,
    ) -> Result<RawAnswer, LabError> {
        let body = serde_json::to_vec(pod)
            .map_err(|e| LabError::Kube(format!("encoding the pod: {e}")))?;
        let req = kube::core::Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
            .create(
                &PostParams {
                    dry_run,
                    field_manager: None,
                },
                body,
            )
            .map_err(|e| LabError::Kube(format!("building the request: {e}")))?;
        let (sent_at, t0) = (now_rfc3339(), Instant::now());
        let resp = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(kube_err)?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect_bytes().await.map_err(kube_err)?;
        Ok(raw_answer(status, &bytes, sent_at, t0))
    }

    /// Sends one GET of a pod and returns the answer verbatim (404 included).
    pub async fn get_pod_raw(&self, namespace: &str, name: &str) -> Result<RawAnswer, LabError> {
        let req = kube::core::Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
            .get(name, &Default::default())
            .map_err(|e| LabError::Kube(format!("building the request: {e}")))?;
        let (sent_at, t0) = (now_rfc3339(), Instant::now());
        let resp = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(kube_err)?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect_bytes().await.map_err(kube_err)?;
        Ok(raw_answer(status, &bytes, sent_at, t0))
    }
}

impl Cluster {
    /// Sends `GET path` (e.g. `/metrics`) with this client's credential and returns the HTTP
    /// status and the body as text, whatever the status (a 403 from RBAC is an answer, not an
    /// error).
    ///
    /// Errors: only when no HTTP answer came ([`LabError::ClusterUnreachable`] / [`LabError::Kube`]).
    pub async fn get_text_raw(&self, path: &str) -> Result<(u16, String), LabError> {
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| LabError::Kube(format!("building GET {path}: {e}")))?;
        let resp = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(kube_err)?;
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect_bytes().await.map_err(kube_err)?;
        Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
    }
}

/// Read-only lists for the failure diagnostics ([`crate::diagnostics`]); each is one API call.
impl Cluster {
    /// Every core/v1 Event of `namespace`, as stored (unsorted).
    pub async fn events(
        &self,
        namespace: &str,
    ) -> Result<Vec<k8s_openapi::api::core::v1::Event>, LabError> {
        Ok(
            Api::<k8s_openapi::api::core::v1::Event>::namespaced(self.client.clone(), namespace)
                .list(&ListParams::default())
                .await
                .map_err(kube_err)?
                .items,
        )
    }

    /// Every pod of `namespace`, sorted by name.
    pub async fn pods(&self, namespace: &str) -> Result<Vec<Pod>, LabError> {
        sorted_by_name(
            Api::<Pod>::namespaced(self.client.clone(), namespace),
            &ListParams::default(),
        )
        .await
    }

    /// Every Deployment of `namespace`, sorted by name.
    pub async fn deployments(&self, namespace: &str) -> Result<Vec<Deployment>, LabError> {
        sorted_by_name(
            Api::<Deployment>::namespaced(self.client.clone(), namespace),
            &ListParams::default(),
        )
        .await
    }

    /// The last `tail_lines` lines of one container's log (`GET …/pods/NAME/log?container=C
    /// &tailLines=N[&previous=true]`; `previous`: the container's previous instance, which the
    /// API server has only after a restart).
    pub async fn pod_log_tail(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        tail_lines: i64,
        previous: bool,
    ) -> Result<String, LabError> {
        Api::<Pod>::namespaced(self.client.clone(), namespace)
            .logs(
                pod,
                &kube::api::LogParams {
                    container: Some(container.to_owned()),
                    tail_lines: Some(tail_lines),
                    previous,
                    timestamps: true,
                    ..Default::default()
                },
            )
            .await
            .map_err(kube_err)
    }

    /// Every MutatingWebhookConfiguration, as stored, sorted by name.
    pub async fn mutating_webhook_configurations(
        &self,
    ) -> Result<
        Vec<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>,
        LabError,
    > {
        sorted_by_name(
            Api::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>::all(
                self.client.clone(),
            ),
            &ListParams::default(),
        )
        .await
    }

    /// The EndpointSlices of Service `namespace/service` (label `kubernetes.io/service-name`).
    pub async fn endpoint_slices(
        &self,
        namespace: &str,
        service: &str,
    ) -> Result<Vec<k8s_openapi::api::discovery::v1::EndpointSlice>, LabError> {
        Ok(
            Api::<k8s_openapi::api::discovery::v1::EndpointSlice>::namespaced(
                self.client.clone(),
                namespace,
            )
            .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
            .await
            .map_err(kube_err)?
            .items,
        )
    }

    /// Every Node, as stored.
    pub async fn nodes(&self) -> Result<Vec<Node>, LabError> {
        Ok(Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(kube_err)?
            .items)
    }
}

fn raw_answer(http_status: u16, bytes: &[u8], sent_at: String, t0: Instant) -> RawAnswer {
    let elapsed_ms = t0.elapsed().as_millis() as u64;
    let answered_at = now_rfc3339();
    let body = serde_json::from_slice(bytes)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned()));
    RawAnswer {
        http_status,
        body,
        sent_at,
        answered_at,
        elapsed_ms,
    }
}

/// The webhook named `webhook` in `configs`: (its configuration, the webhook).
pub fn find_webhook_in(
    configs: &[ValidatingWebhookConfiguration],
    webhook: &str,
) -> Option<(ValidatingWebhookConfiguration, ValidatingWebhook)> {
    configs.iter().find_map(|c| {
        c.webhooks
            .as_ref()
            .and_then(|ws| ws.iter().find(|w| w.name == webhook))
            .map(|w| (c.clone(), w.clone()))
    })
}

/// The fine-grained webhook name Kyverno 1.19 registers for a ValidatingPolicy with
/// `webhookConfiguration.timeoutSeconds` set (kyverno v1.19.1 `pkg/controllers/webhook/validating.go`,
/// `buildWebhookRules`): `vpol.validate.kyverno.svc-{fail|ignore}-finegrained-<policy>`.
pub fn fine_grained_webhook_name(failure_policy: &str, policy: &str) -> String {
    let mode = if failure_policy.eq_ignore_ascii_case("ignore") {
        "ignore"
    } else {
        "fail"
    };
    format!("vpol.validate.kyverno.svc-{mode}-finegrained-{policy}")
}

/// Now, RFC 3339 UTC with milliseconds: the evidence's one clock.
pub use crate::facts::now_rfc3339;

/// Serialises a kube object as JSON.
pub fn to_json<T: Serialize>(obj: &T) -> Result<serde_json::Value, LabError> {
    serde_json::to_value(obj).map_err(|e| LabError::Kube(format!("encoding an object: {e}")))
}

/// A fact [`crate::derive`] derived from an object the client read, or the lab's error when it
/// could not (the API server's answer is not the object it should be).
///
/// Errors: [`LabError::Kube`] naming the raw field.
pub fn derived<T>(fact: Result<T, crate::derive::DeriveError>) -> Result<T, LabError> {
    fact.map_err(|e| LabError::Kube(format!("deriving a fact from the API's answer: {e}")))
}

fn from_json<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Result<T, LabError> {
    serde_json::from_value(v.clone())
        .map_err(|e| LabError::Kube(format!("decoding an object: {e}")))
}

/// A client configuration from the kubeconfig file `path` with `options`: (config, the path).
/// Errors: [`LabError::ClusterUnreachable`] naming the file.
async fn config_from_file(
    path: PathBuf,
    options: &KubeConfigOptions,
) -> Result<(Config, Option<PathBuf>), LabError> {
    let unreachable = |detail: String| LabError::ClusterUnreachable {
        kubeconfig: Some(path.clone()),
        detail,
    };
    let kc = Kubeconfig::read_from(&path)
        .map_err(|e| unreachable(format!("reading kubeconfig: {e}")))?;
    let config = Config::from_custom_kubeconfig(kc, options)
        .await
        .map_err(|e| unreachable(format!("loading kubeconfig: {e}")))?;
    Ok((config, Some(path)))
}

/// Maps a kube-rs error: transport failures become [`LabError::ClusterUnreachable`], API errors
/// [`LabError::Kube`] with the server's message.
pub fn kube_err(e: kube::Error) -> LabError {
    match &e {
        kube::Error::Api(s) => LabError::Kube(format!("{} ({} {})", s.message, s.code, s.reason)),
        kube::Error::HyperError(_) | kube::Error::Service(_) => LabError::ClusterUnreachable {
            kubeconfig: None,
            detail: error_chain(&e),
        },
        _ => LabError::Kube(error_chain(&e)),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// LIST through `api` with `params`, the items sorted by `metadata.name` (a stable order for
/// evidence and diagnostics files).
async fn sorted_by_name<K>(api: Api<K>, params: &ListParams) -> Result<Vec<K>, LabError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut items = api.list(params).await.map_err(kube_err)?.items;
    items.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_names_follow_kyverno() {
        assert_eq!(
            fine_grained_webhook_name("Fail", POLICY_NAME),
            "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label"
        );
        assert_eq!(
            fine_grained_webhook_name("Ignore", POLICY_NAME),
            "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label"
        );
    }

    #[test]
    fn finds_a_webhook_by_name_across_configurations() {
        let cfgs: Vec<ValidatingWebhookConfiguration> = serde_json::from_value(serde_json::json!([
            {"metadata": {"name": "a"}, "webhooks": []},
            {"metadata": {"name": RESOURCE_WEBHOOK_CONFIG}, "webhooks": [{
                "name": "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label",
                "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc", "path": "/vpol/kca-webhook-label"}},
                "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v1"]
            }]}
        ]))
        .unwrap();
        let (cfg, wh) = find_webhook_in(
            &cfgs,
            "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label",
        )
        .unwrap();
        assert_eq!(cfg.metadata.name.as_deref(), Some(RESOURCE_WEBHOOK_CONFIG));
        assert_eq!(wh.side_effects, "NoneOnDryRun");
        assert!(
            find_webhook_in(
                &cfgs,
                "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label"
            )
            .is_none()
        );
    }

    #[test]
    fn explicit_kubeconfig_wins() {
        assert_eq!(
            resolve_kubeconfig(Some(Path::new("/x/kc.yaml"))),
            Some(PathBuf::from("/x/kc.yaml"))
        );
    }

    #[test]
    fn one_kubeconfig_file_or_none_when_kubeconfig_names_several() {
        let files = |present: &'static [&'static str]| {
            move |p: &Path| present.iter().any(|f| Path::new(f) == p)
        };
        let home = || Some(PathBuf::from("/root"));
        let env = |v: &str| Some(std::ffi::OsString::from(v));
        let no_k3s: &[&str] = &["/a/kc", "/b/kc", "/root/.kube/config"];
        let with_k3s: &[&str] = &[K3S_KUBECONFIG, "/a/kc", "/b/kc", "/root/.kube/config"];
        let found = |p: &str| Some(PathBuf::from(p));
        // The flag first, then k3s's file when it exists, whatever KUBECONFIG says.
        let flag = Some(Path::new("/x"));
        assert_eq!(
            kubeconfig_file(flag, env("/a/kc:/b/kc"), home(), files(with_k3s)),
            found("/x")
        );
        assert_eq!(
            kubeconfig_file(None, env("/a/kc"), home(), files(with_k3s)),
            found(K3S_KUBECONFIG)
        );
        // KUBECONFIG's one file.
        assert_eq!(
            kubeconfig_file(None, env("/a/kc"), home(), files(no_k3s)),
            found("/a/kc")
        );
        assert_eq!(
            kubeconfig_file(None, env("/gone"), home(), files(no_k3s)),
            None
        );
        // A merged KUBECONFIG has no one file: kube-rs merges, and a helper needs --kubeconfig.
        assert_eq!(
            kubeconfig_file(None, env("/a/kc:/b/kc"), home(), files(no_k3s)),
            None
        );
        // Unset or empty: ~/.kube/config when it is a file.
        assert_eq!(
            kubeconfig_file(None, None, home(), files(no_k3s)),
            found("/root/.kube/config")
        );
        assert_eq!(
            kubeconfig_file(None, env(""), home(), files(no_k3s)),
            found("/root/.kube/config")
        );
        assert_eq!(kubeconfig_file(None, None, home(), files(&[])), None);
    }
}
