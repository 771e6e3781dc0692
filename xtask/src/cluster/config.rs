//! Cluster intent ([`ClusterConfig`]) and every path and address derived from it ([`Runtime`]); no I/O here.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

/// Pod CIDR of the cluster (k3s's default), given to kube-controller-manager and kube-proxy.
pub const POD_CIDR: &str = "10.42.0.0/16";
/// The node's pod range: the first /24 that kube-controller-manager allocates from [`POD_CIDR`];
/// the CNI bridge's host-local IPAM hands addresses out of it.
pub const NODE_POD_CIDR: &str = "10.42.0.0/24";
/// Service CIDR of the cluster (k3s's default).
pub const SERVICE_CIDR: &str = "10.43.0.0/16";
/// ClusterIP of the `default/kubernetes` Service: the first address of [`SERVICE_CIDR`].
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 43, 0, 1);
/// The /16 out of which each cluster's veth /30 is taken (host side `.1`, node side `.2`).
pub const VETH_SUPERNET: Ipv4Addr = Ipv4Addr::new(10, 44, 0, 0);
/// The sandbox (pause) image containerd's CRI pins, and the labs' workload image.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10.1";
/// Secure port of kube-apiserver inside the node's network namespace.
pub const APISERVER_PORT: u16 = 6443;
/// kine's etcd-protocol listen port on the node namespace's loopback.
pub const KINE_PORT: u16 = 2379;
/// The API server's audit log, relative to the state dir ([`Runtime::audit_log`]).
pub const AUDIT_LOG: &str = "audit/audit.log";
/// Default cluster name of `cargo xtask cluster up` (its `--name` default).
pub use crate::flags::DEFAULT_NAME;

/// What the user asked for: the cluster's name, where state goes, which binaries to run.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// Cluster name: 1 to 20 characters of `[a-z0-9-]`, starting with a letter.
    pub name: String,
    /// Directory holding one state directory per cluster (default `<repo>/target/lab`).
    pub state_root: PathBuf,
    /// Directory with the upstream programs (kube-*, kubelet, kine, containerd, ctr, runc, crictl, helm).
    pub bin_dir: PathBuf,
    /// Directory with the CNI plugins (bridge, host-local, loopback, portmap).
    pub cni_bin_dir: PathBuf,
}

impl ClusterConfig {
    /// Checks the cluster name: it becomes part of a network namespace, a cgroup and a node name.
    pub fn validate(&self) -> Result<()> {
        validate_name(&self.name)
    }

    /// The cluster's state directory: `<state_root>/<name>`.
    pub fn state_dir(&self) -> PathBuf {
        self.state_root.join(&self.name)
    }
}

/// Names that are directories of the state root other than clusters' (`backends`: the
/// kubeconfig and k3s backends' state, `xtask::backend::state_dir`).
pub const RESERVED_NAMES: &[&str] = &["backends"];

/// Checks a cluster name (1 to 20 characters of `[a-z0-9-]`, starting with a letter).
pub fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 20
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        bail!(
            "invalid cluster name {name:?}: expected 1 to 20 characters of [a-z0-9-] starting with a letter"
        );
    }
    if RESERVED_NAMES.contains(&name) {
        bail!(
            "cluster name {name:?} is reserved: <state root>/{name} holds the kubeconfig and k3s backends' state"
        );
    }
    Ok(())
}

/// Default root of all cluster state directories: `<repo>/target/lab`, or `$KCA_LAB_STATE_ROOT`.
pub fn default_state_root() -> PathBuf {
    if let Some(root) = std::env::var_os("KCA_LAB_STATE_ROOT") {
        return PathBuf::from(root);
    }
    repo_root().join("target").join("lab")
}

/// The repository root (the parent of the `xtask` crate directory).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The node's link to the host: a veth /30 out of [`VETH_SUPERNET`], chosen free at `up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeNet {
    /// Index of the /30 inside 10.44.0.0/16 (0..16384): 10.44.0.0/30 is index 0.
    pub index: u32,
}

impl NodeNet {
    /// Number of /30 blocks in the /16.
    pub const COUNT: u32 = 1 << 14;

    fn base(&self) -> u32 {
        u32::from(VETH_SUPERNET) + self.index * 4
    }
    /// Host side of the veth pair (`.1` of the /30).
    pub fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base() + 1)
    }
    /// Node side of the veth pair (`.2` of the /30): the node IP, apiserver advertise address.
    pub fn node_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base() + 2)
    }
    /// The /30 in CIDR notation.
    pub fn cidr(&self) -> String {
        format!("{}/30", Ipv4Addr::from(self.base()))
    }
    /// Name of the host side of the veth pair (`kca-h<index>`, at most 15 bytes).
    pub fn host_veth(&self) -> String {
        format!("kca-h{}", self.index)
    }
    /// Temporary name of the node side before it moves into the namespace and becomes `eth0`.
    pub fn node_veth_tmp(&self) -> String {
        format!("kca-n{}", self.index)
    }
}

/// Name of the node's veth inside its network namespace.
pub const NODE_IFACE: &str = "eth0";

/// Every path, name and address derived from a [`ClusterConfig`] and its [`NodeNet`]; computed without I/O.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// Cluster name.
    pub name: String,
    /// `<state_root>/<name>`.
    pub state_dir: PathBuf,
    /// Network namespace name (`kca-<name>`), a file under `/run/netns`.
    pub netns: String,
    /// Node name registered by kubelet (`kca-<name>`).
    pub node_name: String,
    /// The veth /30.
    pub net: NodeNet,
    /// Upstream programs.
    pub bin_dir: PathBuf,
    /// CNI plugins.
    pub cni_bin_dir: PathBuf,
    /// cgroup parent of kubelet's `kubepods` hierarchy (`/kca-<name>`), in every cgroup v1 controller.
    pub cgroup_root: String,
    /// Daemon flags the running Kubernetes minor handles differently from the pinned one (the
    /// row of `xtask::upstream::versions::KUBERNETES_MINORS`; empty for the pinned minor),
    /// applied by [`super::daemons::spec`].
    pub flag_changes: &'static [crate::upstream::versions::FlagChange],
}

impl Runtime {
    /// Derives every path and address; no I/O.
    pub fn new(cfg: &ClusterConfig, net: NodeNet) -> Runtime {
        Runtime {
            name: cfg.name.clone(),
            state_dir: cfg.state_dir(),
            netns: netns_name(&cfg.name),
            node_name: format!("kca-{}", cfg.name),
            net,
            bin_dir: cfg.bin_dir.clone(),
            cni_bin_dir: cfg.cni_bin_dir.clone(),
            cgroup_root: format!("/kca-{}", cfg.name),
            flag_changes: &[],
        }
    }

    /// `<state>/<rel>`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.state_dir.join(rel)
    }
    /// PKI directory.
    pub fn pki(&self) -> PathBuf {
        self.path("pki")
    }
    /// `<pki>/<name>`.
    pub fn pki_file(&self, name: &str) -> PathBuf {
        self.pki().join(name)
    }
    /// Kubeconfig of component `who` (admin, kubelet, controller-manager, scheduler, kube-proxy).
    pub fn kubeconfig(&self, who: &str) -> PathBuf {
        self.path("kubeconfig").join(format!("{who}.kubeconfig"))
    }
    /// The user's kubeconfig (cluster-admin, server = node IP); printed by `status`.
    pub fn user_kubeconfig(&self) -> PathBuf {
        self.path("kubeconfig.yaml")
    }
    /// The API server's audit directory (`<state>/audit`, `0700`): its policy and its log.
    pub fn audit_dir(&self) -> PathBuf {
        self.path("audit")
    }
    /// The API server's audit policy (`audit.k8s.io/v1` Policy, written at `up`).
    pub fn audit_policy(&self) -> PathBuf {
        self.audit_dir().join("policy.yaml")
    }
    /// The API server's audit log (JSON lines, `0600`; `--audit-log-path`), removed with the
    /// state dir.
    pub fn audit_log(&self) -> PathBuf {
        self.path(AUDIT_LOG)
    }
    /// Log file of a daemon.
    pub fn log(&self, daemon: &str) -> PathBuf {
        self.path("logs").join(format!("{daemon}.log"))
    }
    /// containerd's gRPC socket: the node's CRI endpoint.
    pub fn containerd_socket(&self) -> PathBuf {
        self.path("containerd/containerd.sock")
    }
    /// CRI endpoint as a URL (`unix:///…/containerd.sock`).
    pub fn cri_endpoint(&self) -> String {
        format!("unix://{}", self.containerd_socket().display())
    }
    /// kubelet's root directory.
    pub fn kubelet_root(&self) -> PathBuf {
        self.path("kubelet")
    }
    /// CNI configuration directory read by containerd.
    pub fn cni_conf_dir(&self) -> PathBuf {
        self.path("cni/net.d")
    }
    /// Name of the CNI network (`kca-<name>`).
    pub fn cni_network(&self) -> String {
        format!("kca-{}", self.name)
    }
    /// `https://<node ip>:6443`.
    pub fn apiserver_url(&self) -> String {
        format!("https://{}:{}", self.net.node_ip(), APISERVER_PORT)
    }
    /// The cluster's state record (`cluster.json`).
    pub fn record_file(&self) -> PathBuf {
        self.path("cluster.json")
    }
    /// A program from the upstream bin dir.
    pub fn bin(&self, program: &str) -> PathBuf {
        self.bin_dir.join(program)
    }
}

/// Network namespace name of cluster `name`.
pub fn netns_name(name: &str) -> String {
    format!("kca-{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_net_addresses() {
        let n = NodeNet { index: 0 };
        assert_eq!(n.host_ip(), Ipv4Addr::new(10, 44, 0, 1));
        assert_eq!(n.node_ip(), Ipv4Addr::new(10, 44, 0, 2));
        assert_eq!(n.cidr(), "10.44.0.0/30");
        let n = NodeNet { index: 65 };
        assert_eq!(n.node_ip(), Ipv4Addr::new(10, 44, 1, 6));
        let last = NodeNet {
            index: NodeNet::COUNT - 1,
        };
        assert_eq!(last.node_ip(), Ipv4Addr::new(10, 44, 255, 254));
        assert!(last.host_veth().len() <= 15);
    }

    #[test]
    fn names() {
        assert!(validate_name("kca").is_ok());
        assert!(validate_name("smoke-1").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("1abc").is_err());
        assert!(validate_name("Abc").is_err());
        assert!(validate_name("a/b").is_err());
        assert!(validate_name("abcdefghijklmnopqrstu").is_err());
        assert!(validate_name("backends").is_err());
    }
}
