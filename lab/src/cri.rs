//! A typed client of the node's container runtime (CRI `runtime.v1` over gRPC on a unix socket):
//! finds the Kyverno admission controller's container and reports its host PID.
//!
//! The lab needs the CRI for one thing: the identity of the one process a fault may touch
//! (container ID, pod UID, PID, restart attempt). `crictl` is for people; this module speaks the
//! same protocol with the `k8s-cri` bindings (tonic) so the answer is typed, not scraped.
//!
//! **Source of the facts used here:**
//! - kubelet labels every container with `io.kubernetes.pod.namespace`, `io.kubernetes.pod.name`,
//!   `io.kubernetes.pod.uid` and `io.kubernetes.container.name` (kubelet `kuberuntime_labels.go`).
//! - containerd answers `ContainerStatus` with `verbose: true` with an `info` map whose key
//!   `"info"` holds JSON with `"pid"` (the task's PID in containerd's PID namespace, i.e. the host's
//!   for k3s and the embedded node) and `"sandboxID"` (containerd
//!   `internal/cri/server/container_status.go`; `crictl inspect` prints the same as `.info.pid`).
//! - `metadata.attempt` is kubelet's restart counter for that container in that pod.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use k8s_cri::v1::runtime_service_client::RuntimeServiceClient;
use k8s_cri::v1::{
    ContainerFilter, ContainerState, ContainerStateValue, ContainerStatusRequest,
    ListContainersRequest, VersionRequest,
};
use serde::{Deserialize, Serialize};
use tonic::transport::{Channel, Endpoint, Uri};

use crate::error::LabError;

/// k3s's containerd socket: the default CRI endpoint on a student's lab VM.
pub const K3S_CRI_ENDPOINT: &str = "/run/k3s/containerd/containerd.sock";
/// Namespace of the Kyverno installation.
pub const KYVERNO_NAMESPACE: &str = "kyverno";
/// Name of the admission controller's main container in the Kyverno chart 3.9.x.
pub const ADMISSION_CONTAINER: &str = "kyverno";
/// Name prefix of the admission controller's pods (Deployment `kyverno-admission-controller`).
pub const ADMISSION_POD_PREFIX: &str = "kyverno-admission-controller-";

/// kubelet's container labels (kubelet `pkg/kubelet/types/labels.go`).
const LABEL_POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
const LABEL_POD_NAME: &str = "io.kubernetes.pod.name";
const LABEL_POD_UID: &str = "io.kubernetes.pod.uid";
const LABEL_CONTAINER_NAME: &str = "io.kubernetes.container.name";

/// Bound on connecting to the socket and on each CRI call.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The CRI endpoint to use: `flag` (`--cri-endpoint`) when given, else [`K3S_CRI_ENDPOINT`] when
/// that socket exists, else `None` (the caller says that `--cri-endpoint` is needed).
/// A `unix://` prefix is accepted and stripped.
pub fn resolve_endpoint(flag: Option<&Path>) -> Option<PathBuf> {
    match flag {
        Some(p) => Some(strip_unix_scheme(p)),
        None => {
            let k3s = PathBuf::from(K3S_CRI_ENDPOINT);
            k3s.exists().then_some(k3s)
        }
    }
}

fn strip_unix_scheme(p: &Path) -> PathBuf {
    match p.to_str().and_then(|s| s.strip_prefix("unix://")) {
        Some(rest) => PathBuf::from(rest),
        None => p.to_path_buf(),
    }
}

/// One container as the runtime reports it (from `ContainerStatus` with `verbose: true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerIdentity {
    /// The runtime's container ID (64 hex digits for containerd), without a `containerd://` prefix.
    pub container_id: String,
    /// Pod sandbox ID the container belongs to.
    pub sandbox_id: String,
    /// Container name (`io.kubernetes.container.name`).
    pub container_name: String,
    /// Pod name (`io.kubernetes.pod.name`).
    pub pod_name: String,
    /// Pod namespace (`io.kubernetes.pod.namespace`).
    pub pod_namespace: String,
    /// Pod UID (`io.kubernetes.pod.uid`).
    pub pod_uid: String,
    /// kubelet's restart attempt for this container in this pod (`metadata.attempt`, 0 for the first start).
    pub attempt: u32,
    /// Runtime state, e.g. `CONTAINER_RUNNING`.
    pub state: String,
    /// Host PID of the container's init process (`info.pid`); 0 when not running.
    pub pid: i32,
    /// When the container started, RFC 3339 UTC (ms); absent when it never started.
    pub started_at: Option<String>,
    /// Image reference the runtime reports.
    pub image_ref: String,
}

/// A connected CRI client (one gRPC channel over the unix socket).
pub struct CriClient {
    endpoint: PathBuf,
    client: RuntimeServiceClient<Channel>,
}

impl std::fmt::Debug for CriClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriClient")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

impl CriClient {
    /// Connects to the CRI socket at `endpoint` and checks that it answers `Version`.
    ///
    /// Errors: [`LabError::Cri`] naming the socket when it cannot be connected to or does not answer
    /// within 10 s.
    pub async fn connect(endpoint: &Path) -> Result<CriClient, LabError> {
        let endpoint = strip_unix_scheme(endpoint);
        let path = endpoint.clone();
        let cri_err = |detail: String| LabError::Cri {
            endpoint: endpoint.clone(),
            detail,
        };
        // The URI is ignored by the connector: every connection goes to the unix socket.
        let channel = Endpoint::try_from("http://[::]:50051")
            .map_err(|e| cri_err(e.to_string()))?
            .connect_timeout(CALL_TIMEOUT)
            .timeout(CALL_TIMEOUT)
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(TokioIo::new(
                        tokio::net::UnixStream::connect(path).await?,
                    ))
                }
            }))
            .await
            .map_err(|e| cri_err(format!("connecting: {}", error_chain(&e))))?;
        let mut client = RuntimeServiceClient::new(channel);
        client
            .version(VersionRequest {
                version: "v1".into(),
            })
            .await
            .map_err(|e| cri_err(format!("version: {}", e.message())))?;
        Ok(CriClient { endpoint, client })
    }

    /// The socket this client talks to.
    pub fn endpoint(&self) -> &Path {
        &self.endpoint
    }

    /// The runtime's name and version, e.g. `containerd v2.1.4`.
    pub async fn runtime_version(&mut self) -> Result<String, LabError> {
        let v = self
            .client
            .version(VersionRequest {
                version: "v1".into(),
            })
            .await
            .map_err(|e| self.err(format!("version: {}", e.message())))?
            .into_inner();
        Ok(format!("{} {}", v.runtime_name, v.runtime_version))
    }

    /// IDs of the running containers whose kubelet labels include every pair of `labels`.
    pub async fn running_container_ids(
        &mut self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<String>, LabError> {
        let filter = ContainerFilter {
            state: Some(ContainerStateValue {
                state: ContainerState::ContainerRunning as i32,
            }),
            label_selector: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let list = self
            .client
            .list_containers(ListContainersRequest {
                filter: Some(filter),
            })
            .await
            .map_err(|e| self.err(format!("list containers: {}", e.message())))?
            .into_inner();
        let mut ids: Vec<String> = list.containers.into_iter().map(|c| c.id).collect();
        ids.sort();
        Ok(ids)
    }

    /// The verbose status of one container, with its host PID.
    ///
    /// Errors: [`LabError::Cri`] when the runtime does not know the container, or its verbose
    /// `info` has no numeric `pid` (a runtime other than containerd may put it elsewhere).
    pub async fn container(&mut self, container_id: &str) -> Result<ContainerIdentity, LabError> {
        let resp = self
            .client
            .container_status(ContainerStatusRequest {
                container_id: container_id.to_owned(),
                verbose: true,
            })
            .await
            .map_err(|e| self.err(format!("container status {container_id}: {}", e.message())))?
            .into_inner();
        let status = resp
            .status
            .ok_or_else(|| self.err(format!("container status {container_id}: empty answer")))?;
        let (pid, sandbox_id) = parse_verbose_info(&resp.info)
            .map_err(|detail| self.err(format!("container status {container_id}: {detail}")))?;
        let label = |k: &str| status.labels.get(k).cloned().unwrap_or_default();
        let metadata = status.metadata.clone().unwrap_or_default();
        Ok(ContainerIdentity {
            container_id: status.id.clone(),
            sandbox_id,
            container_name: if metadata.name.is_empty() {
                label(LABEL_CONTAINER_NAME)
            } else {
                metadata.name
            },
            pod_name: label(LABEL_POD_NAME),
            pod_namespace: label(LABEL_POD_NAMESPACE),
            pod_uid: label(LABEL_POD_UID),
            attempt: metadata.attempt,
            state: ContainerState::try_from(status.state)
                .map(|s| s.as_str_name().to_owned())
                .unwrap_or_else(|_| format!("UNKNOWN({})", status.state)),
            pid,
            started_at: nanos_to_rfc3339(status.started_at),
            image_ref: status.image_ref,
        })
    }

    /// Finds the one running admission-controller container: namespace `kyverno`, container
    /// `kyverno`, pod name `kyverno-admission-controller-…`, and when `pod_uid` is given, that pod.
    ///
    /// Errors: [`LabError::Cri`] when none or more than one container matches (the lab expects
    /// exactly one replica), naming what was found.
    pub async fn find_admission_container(
        &mut self,
        pod_uid: Option<&str>,
    ) -> Result<ContainerIdentity, LabError> {
        let mut labels = vec![
            (LABEL_POD_NAMESPACE, KYVERNO_NAMESPACE),
            (LABEL_CONTAINER_NAME, ADMISSION_CONTAINER),
        ];
        if let Some(uid) = pod_uid {
            labels.push((LABEL_POD_UID, uid));
        }
        let ids = self.running_container_ids(&labels).await?;
        let mut found = Vec::new();
        for id in ids {
            let c = self.container(&id).await?;
            if c.pod_name.starts_with(ADMISSION_POD_PREFIX) {
                found.push(c);
            }
        }
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(self.err(format!(
                "no running container {ADMISSION_CONTAINER} of a pod {ADMISSION_POD_PREFIX}* in namespace {KYVERNO_NAMESPACE}{}",
                pod_uid.map(|u| format!(" with pod uid {u}")).unwrap_or_default()
            ))),
            n => Err(self.err(format!(
                "{n} running admission-controller containers ({}); the lab expects exactly one",
                found.iter().map(|c| format!("{} in {}", short_id(&c.container_id), c.pod_name)).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    fn err(&self, detail: String) -> LabError {
        LabError::Cri {
            endpoint: self.endpoint.clone(),
            detail,
        }
    }
}

/// The first 13 characters of a container ID, as `crictl ps` shows it.
pub fn short_id(id: &str) -> &str {
    &id[..id.len().min(13)]
}

/// Reads `pid` and `sandboxID` from containerd's verbose `info` map (key `"info"`, a JSON text).
fn parse_verbose_info(info: &HashMap<String, String>) -> Result<(i32, String), String> {
    let text = info.get("info").ok_or_else(|| {
        format!(
            "verbose status has no \"info\" entry (keys: {:?})",
            info.keys().collect::<Vec<_>>()
        )
    })?;
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("verbose info is not JSON: {e}"))?;
    let pid = v
        .get("pid")
        .and_then(serde_json::Value::as_i64)
        .ok_or_else(|| "verbose info has no numeric \"pid\"".to_owned())?;
    let pid = i32::try_from(pid).map_err(|_| format!("verbose info pid {pid} out of range"))?;
    let sandbox = v
        .get("sandboxID")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok((pid, sandbox))
}

fn nanos_to_rfc3339(nanos: i64) -> Option<String> {
    if nanos <= 0 {
        return None;
    }
    let secs = nanos.div_euclid(1_000_000_000);
    let sub = nanos.rem_euclid(1_000_000_000) as u32;
    chrono::DateTime::from_timestamp(secs, sub)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_info_pid_and_sandbox() {
        // Shape of containerd 2.x's verbose ContainerStatus info (trimmed).
        let info = HashMap::from([(
            "info".to_owned(),
            r#"{"sandboxID":"4f1c","pid":41234,"removing":false,"snapshotKey":"x","runtimeType":"io.containerd.runc.v2"}"#
                .to_owned(),
        )]);
        assert_eq!(parse_verbose_info(&info), Ok((41234, "4f1c".to_owned())));
    }

    #[test]
    fn verbose_info_without_pid_is_an_error() {
        let info = HashMap::from([("info".to_owned(), r#"{"sandboxID":"4f1c"}"#.to_owned())]);
        assert!(parse_verbose_info(&info).unwrap_err().contains("pid"));
        assert!(
            parse_verbose_info(&HashMap::new())
                .unwrap_err()
                .contains("no \"info\"")
        );
    }

    #[test]
    fn endpoint_scheme_is_stripped() {
        assert_eq!(
            resolve_endpoint(Some(Path::new("unix:///run/x.sock"))),
            Some(PathBuf::from("/run/x.sock"))
        );
        assert_eq!(
            resolve_endpoint(Some(Path::new("/run/y.sock"))),
            Some(PathBuf::from("/run/y.sock"))
        );
    }

    #[test]
    fn nanos_render_as_utc_millis() {
        assert_eq!(
            nanos_to_rfc3339(1_700_000_000_123_456_789).as_deref(),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(nanos_to_rfc3339(0), None);
    }

    #[tokio::test]
    async fn connecting_to_a_missing_socket_names_it() {
        let err = CriClient::connect(Path::new("/nonexistent/cri.sock"))
            .await
            .unwrap_err();
        match err {
            LabError::Cri { endpoint, detail } => {
                assert_eq!(endpoint, PathBuf::from("/nonexistent/cri.sock"));
                assert!(detail.starts_with("connecting"), "{detail}");
            }
            other => panic!("unexpected error {other}"),
        }
    }
}
