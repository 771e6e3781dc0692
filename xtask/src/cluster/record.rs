//! `cluster.json`: what `up` started and created, written before each step so `down` works after a crash.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::config::{NodeNet, Runtime};
use super::sysctl::SavedSysctl;

/// Schema version of `cluster.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// Paths outside the state dir that the node's programs create whatever their configuration:
/// kubelet's device-plugin socket directory (`pluginapi.DevicePluginPath`, hard-coded), its
/// container log symlink directory (`/var/log/containers`, hard-coded), and containerd's shim
/// socket directory (`/run/containerd/s`, derived from the default state dir in
/// `pkg/shim.SocketAddress`), libcni's result cache (`/var/lib/cni/results`: containernetworking/cni
/// v1.3.0 `libcni.CacheDir`, which containerd's go-cni v1.1.13 gives no option to move), and
/// `/run/netns`, which `ip netns add` creates and bind-mounts onto itself the first time
/// (removed by [`super::teardown::remove_run_netns`] once our namespace is gone). Deepest first.
pub const HOST_PATHS: &[&str] = &[
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet",
    "/var/log/containers",
    "/run/containerd/s",
    "/run/containerd",
    "/var/lib/cni/results",
    "/var/lib/cni",
    RUN_NETNS,
];

/// Where `ip netns add` keeps network namespaces bound (a mount point once it made one).
pub const RUN_NETNS: &str = "/run/netns";

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
    /// `/proc/sys/kernel/random/boot_id` when `up` began: PIDs, the namespace and cgroups of the
    /// record mean something only in this boot ("" in records written before it was kept).
    #[serde(default)]
    pub boot_id: String,
    /// kubelet's host sysctls as found before kubelet started ([`super::sysctl`]); restored at
    /// `down` where still equal to what kubelet set.
    #[serde(default)]
    pub host_sysctls: Vec<SavedSysctl>,
    /// Inode of the network namespace `up` created (`stat -L /run/netns/<netns>`); `down` deletes
    /// a namespace of that name only when its inode is this one.
    #[serde(default)]
    pub netns_inode: Option<u64>,
    /// ifindex of the host side of the veth `up` created; `down` deletes a link of that name only
    /// when its ifindex is this one.
    #[serde(default)]
    pub host_veth_ifindex: Option<u32>,
    /// cgroup directories (`<hierarchy>/kca-<name>`) that `up` created; `down` removes only these.
    #[serde(default)]
    pub cgroups_created: Vec<PathBuf>,
    /// The host's cgroup layout as `up` found it and what `up` changed there (v2: the root's
    /// controllers, the delegated unit, every controller enabled by hand); `down` stops the unit
    /// and reports what stays ([`super::host::CgroupChanges`], docs/host.md).
    #[serde(default)]
    pub cgroup_changes: Option<super::host::CgroupChanges>,
}

/// The current boot's id (`/proc/sys/kernel/random/boot_id`, trimmed).
pub fn boot_id() -> Result<String> {
    Ok(std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .context("reading /proc/sys/kernel/random/boot_id")?
        .trim()
        .to_string())
}

/// Name of the ownership marker written first into a fresh state dir and kept (with `logs/`)
/// after `down`: a state dir is a cluster's only when it holds this marker or `cluster.json`
/// naming the same cluster and the same (canonical) directory.
pub const OWNER_FILE: &str = "kca-state-dir.json";

/// The ownership marker's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Cluster name.
    pub name: String,
    /// Canonical state directory.
    pub state_dir: PathBuf,
    /// RFC 3339 UTC time the directory was made.
    pub created_at: String,
}

impl Owner {
    /// Reads `<state_dir>/kca-state-dir.json` (None when absent).
    pub fn load(state_dir: &Path) -> Result<Option<Owner>> {
        let path = state_dir.join(OWNER_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("parsing {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes the marker durably (temp file, fsync, rename, directory fsync).
    pub fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(self).context("serialising the owner marker")?;
        write_durably(&self.state_dir.join(OWNER_FILE), text.as_bytes())
    }
}

/// Writes `path` atomically and durably: a `0600` temp file in the same directory, fsync, rename
/// over `path`, fsync of the directory (so a power loss leaves the old or the new file, never an
/// empty one).
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().context("a file path without a parent")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a temp file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing {}", tmp.path().display()))?;
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("fsync {}", tmp.path().display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into {}", path.display()))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("fsync {}", dir.display()))
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
            boot_id: boot_id().unwrap_or_default(),
            host_sysctls: Vec::new(),
            netns_inode: None,
            host_veth_ifindex: None,
            cgroups_created: Vec::new(),
            cgroup_changes: None,
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

    /// Writes the record atomically and durably ([`write_durably`], mode 0600).
    pub fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(self).context("serialising cluster.json")?;
        write_durably(&Self::file(&self.state_dir), text.as_bytes())
    }

    /// Whether the record was written in this boot (an empty `boot_id`, from an older record,
    /// counts as this boot: PID plus start time still guard every signal).
    pub fn same_boot(&self) -> bool {
        self.boot_id.is_empty() || boot_id().is_ok_and(|b| b == self.boot_id)
    }

    /// Checks that the record belongs to `state_dir` (the directory it was read from): its `name`
    /// is the directory's name and its `state_dir` is the same directory (canonical paths). A
    /// record copied from another checkout names another directory and is refused, so `down` in
    /// the copy never stops the original's processes.
    pub fn check_belongs(&self, state_dir: &Path) -> Result<()> {
        let here = std::fs::canonicalize(state_dir)
            .with_context(|| format!("resolving {}", state_dir.display()))?;
        let recorded =
            std::fs::canonicalize(&self.state_dir).unwrap_or_else(|_| self.state_dir.clone());
        let name_ok = state_dir.file_name().is_some_and(|n| *n == *self.name);
        if recorded != here || !name_ok {
            anyhow::bail!(
                "{} names cluster {:?} in state directory {}, but it was read from {}: a record copied from elsewhere is not this directory's cluster; nothing was stopped or removed (remove {} by hand if it is a copy)",
                Self::file(state_dir).display(),
                self.name,
                self.state_dir.display(),
                here.display(),
                here.display()
            );
        }
        Ok(())
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

/// A started daemon, as recorded in `cluster.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProcRecord {
    /// Daemon name (`kine`, `kube-apiserver`, …).
    pub name: String,
    /// Host PID.
    pub pid: i32,
    /// Start time from `/proc/<pid>/stat` (field 22, clock ticks since boot): with the PID it
    /// identifies the process across PID reuse.
    #[serde(rename = "start_time")]
    pub start_time_ticks: u64,
    /// Log file (stdout and stderr).
    pub log: String,
    /// The full command line as started.
    pub argv: Vec<String>,
}

/// `(state, start_time_ticks)` of a PID from `/proc/<pid>/stat`, or None when there is no such
/// process.
pub fn proc_stat(pid: i32) -> Option<(char, u64)> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    Some((stat.state, stat.starttime))
}

impl ProcRecord {
    /// Whether the recorded process still runs (same PID, same start time, not a zombie).
    pub fn alive(&self) -> bool {
        matches!(proc_stat(self.pid), Some((state, st)) if st == self.start_time_ticks && state != 'Z')
    }
}
