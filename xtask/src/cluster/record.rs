//! `cluster.json`: what `up` started and created, written before each step so `down` works after a crash.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::config::{NodeNet, Runtime};
use super::process::ProcRecord;

/// Schema version of `cluster.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// Paths outside the state dir that the node's programs create whatever their configuration:
/// kubelet's device-plugin socket directory (`pluginapi.DevicePluginPath`, hard-coded), its
/// container log symlink directory (`/var/log/containers`, hard-coded), and containerd's shim
/// socket directory (`/run/containerd/s`, derived from the default state dir in
/// `pkg/shim.SocketAddress`). Deepest first.
pub const HOST_PATHS: &[&str] = &[
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/var/log/containers",
    "/run/containerd/s",
    "/run/containerd",
];

/// The state record of one cluster (`<state_dir>/cluster.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Cluster name.
    pub name: String,
    /// State directory.
    pub state_dir: PathBuf,
    /// Network namespace name (a file under /run/netns).
    pub netns: String,
    /// Node name.
    pub node_name: String,
    /// Node UID (metadata.uid of the Node object), once kubelet registered it.
    pub node_uid: Option<String>,
    /// The veth /30.
    pub net: NodeNet,
    /// cgroup parent of the node's pods (`/kca-<name>`) in every hierarchy.
    pub cgroup_root: String,
    /// Upstream programs used.
    pub bin_dir: PathBuf,
    /// CNI plugins used.
    pub cni_bin_dir: PathBuf,
    /// Started daemons in start order.
    pub processes: Vec<ProcRecord>,
    /// RFC 3339 UTC time `up` began.
    pub created_at: String,
    /// Host paths outside the state dir that did not exist before `up` and that kubelet or
    /// containerd create at fixed places (see [`HOST_PATHS`]); `down` removes them when empty.
    #[serde(default)]
    pub host_paths_created: Vec<PathBuf>,
    /// Phase durations in milliseconds since `up` began (e.g. `apiserver_ready_ms`, `kyverno_answering_ms`).
    pub timings_ms: BTreeMap<String, u64>,
}

impl ClusterRecord {
    /// A fresh record for a runtime (no processes yet).
    pub fn new(rt: &Runtime) -> ClusterRecord {
        ClusterRecord {
            schema_version: SCHEMA_VERSION,
            name: rt.name.clone(),
            state_dir: rt.state_dir.clone(),
            netns: rt.netns.clone(),
            node_name: rt.node_name.clone(),
            node_uid: None,
            net: rt.net,
            cgroup_root: rt.cgroup_root.clone(),
            bin_dir: rt.bin_dir.clone(),
            cni_bin_dir: rt.cni_bin_dir.clone(),
            processes: Vec::new(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            timings_ms: BTreeMap::new(),
            host_paths_created: HOST_PATHS
                .iter()
                .map(PathBuf::from)
                .filter(|p| !p.exists())
                .collect(),
        }
    }

    /// `<state_dir>/cluster.json`.
    pub fn file(state_dir: &Path) -> PathBuf {
        state_dir.join("cluster.json")
    }

    /// The containerd socket (CRI endpoint path).
    pub fn cri_socket(&self) -> PathBuf {
        self.state_dir.join("containerd/containerd.sock")
    }

    /// The user kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.state_dir.join("kubeconfig.yaml")
    }

    /// Writes the record atomically (temp file + rename).
    pub fn save(&self) -> Result<()> {
        let path = Self::file(&self.state_dir);
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).context("serialising cluster.json")?;
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    }

    /// Reads the record of the cluster in `state_dir`, or None when there is none.
    pub fn load(state_dir: &Path) -> Result<Option<ClusterRecord>> {
        let path = Self::file(state_dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("parsing {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }
}
