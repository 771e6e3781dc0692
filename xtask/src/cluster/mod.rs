//! The embedded backend: a real single-node Kubernetes v1.35.8 (kine, kube-apiserver,
//! kube-controller-manager, kube-scheduler, containerd + runc + CNI bridge, kubelet, kube-proxy)
//! in its own network namespace, then Kyverno v1.19.1 by Helm, then the lab environment.
//!
//! # Library use (tests, the lab runner)
//!
//! ```no_run
//! use xtask::cluster::{Cluster, UpOptions};
//! let cluster = Cluster::up(UpOptions::new("smoke"))?;   // returns when Kyverno answers
//! let kubeconfig = cluster.kubeconfig();      // PathBuf: user kubeconfig (cluster-admin)
//! let cri = cluster.cri_endpoint();           // "unix:///…/containerd/containerd.sock"
//! let node = cluster.node_name();             // "kca-smoke"
//! let uid = cluster.node_uid();               // Node metadata.uid
//! let dir = cluster.state_dir();              // state directory (logs in <dir>/logs)
//! cluster.down()?;                            // stops everything, removes every leftover
//! # anyhow::Ok(())
//! ```
//!
//! `Cluster::status(name, root)` reads a cluster's state without changing it;
//! `down_by_name(name, root)` tears down from the state record alone (also after a crash).
//! Which binaries: [`Inputs::resolve`]. The lab mark: [`mark`].

pub mod config;
pub mod daemons;
pub mod foreign;
pub mod host;
pub mod kubeconfig;
pub mod kyverno;
pub mod mark;
pub mod netns;
pub mod pki;
pub mod preflight;
pub mod process;
pub mod ready;
pub mod record;
pub mod sysctl;
pub mod teardown;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::flags::{ClusterCmd, ClusterSub as Sub};
use crate::status::Step;
use config::{ClusterConfig, Runtime};
use host::HostFacts;
use kyverno::ImageInput;
use record::ClusterRecord;

/// Where the upstream programs, images and chart come from.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// kube-*, kubelet, kine, containerd(+shim), ctr, runc, crictl, helm.
    pub bin_dir: PathBuf,
    /// CNI plugins.
    pub cni_bin_dir: PathBuf,
    /// Image archives to import (pause and Kyverno's five).
    pub images: Vec<ImageInput>,
    /// The assembled Kyverno chart; None: no Kyverno.
    pub chart_dir: Option<PathBuf>,
}

impl Inputs {
    /// From the environment, when `KCA_UPSTREAM_BIN` is set (manual trials, prebuilt binaries):
    /// `KCA_UPSTREAM_BIN` (programs), `KCA_UPSTREAM_CNI_BIN` (default: the same directory),
    /// `KCA_UPSTREAM_IMAGES` (a directory of `*.tar` OCI archives; each file's
    /// `<reference>.ref` sibling, or its index's `org.opencontainers.image.ref.name`, names it),
    /// `KCA_UPSTREAM_CHART` (chart directory).
    pub fn from_env() -> Result<Option<Inputs>> {
        let Some(bin) = std::env::var_os("KCA_UPSTREAM_BIN") else {
            return Ok(None);
        };
        let bin_dir = PathBuf::from(bin);
        let cni_bin_dir = std::env::var_os("KCA_UPSTREAM_CNI_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| bin_dir.clone());
        let mut images = Vec::new();
        if let Some(dir) = std::env::var_os("KCA_UPSTREAM_IMAGES") {
            let dir = PathBuf::from(dir);
            let rd = std::fs::read_dir(&dir)
                .with_context(|| format!("reading KCA_UPSTREAM_IMAGES {}", dir.display()))?;
            let mut paths: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "tar"))
                .collect();
            paths.sort();
            for path in paths {
                let ref_file = path.with_extension("ref");
                let reference = std::fs::read_to_string(&ref_file)
                    .with_context(|| {
                        format!(
                            "reading {} (the image reference of {})",
                            ref_file.display(),
                            path.display()
                        )
                    })?
                    .trim()
                    .to_string();
                images.push(ImageInput { reference, path });
            }
        }
        let chart_dir = std::env::var_os("KCA_UPSTREAM_CHART").map(PathBuf::from);
        Ok(Some(Inputs {
            bin_dir,
            cni_bin_dir,
            images,
            chart_dir,
        }))
    }

    /// [`Inputs::from_env`] if `KCA_UPSTREAM_BIN` is set, else the upstream build cache
    /// (`xtask::upstream::ensure_built`, which builds what is missing) for the pinned pair.
    pub fn resolve() -> Result<Inputs> {
        Self::resolve_versions(&crate::upstream::Versions::pinned())
    }

    /// As [`Inputs::resolve`], for the Kubernetes × Kyverno pair `versions` (`KCA_UPSTREAM_BIN`
    /// is refused with another pair: the prebuilt binaries' versions are not known).
    pub fn resolve_versions(versions: &crate::upstream::Versions) -> Result<Inputs> {
        if let Some(i) = Self::from_env()? {
            if !versions.is_pinned() {
                bail!(
                    "KCA_UPSTREAM_BIN is set (prebuilt binaries of unknown versions) and {} was asked for; unset it to build that pair",
                    versions.label()
                );
            }
            return Ok(i);
        }
        upstream_inputs(versions)
    }
}

fn upstream_inputs(versions: &crate::upstream::Versions) -> Result<Inputs> {
    let a = crate::upstream::ensure_built(&crate::upstream::BuildOptions {
        versions: versions.clone(),
        ..Default::default()
    })
    .with_context(|| {
        format!(
            "building the upstream programs, images and chart ({})",
            versions.label()
        )
    })?;
    Ok(Inputs::from(a))
}

impl From<crate::upstream::Artifacts> for Inputs {
    fn from(a: crate::upstream::Artifacts) -> Inputs {
        Inputs {
            bin_dir: a.bin_dir,
            cni_bin_dir: a.cni_bin_dir,
            images: a
                .images
                .into_iter()
                .map(|i| ImageInput {
                    reference: i.reference,
                    path: i.path,
                })
                .collect(),
            chart_dir: Some(a.chart_dir),
        }
    }
}

/// Options of [`Cluster::up`].
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// Cluster name ([`config::validate_name`]).
    pub name: String,
    /// Root of the state directories (default `<repo>/target/lab`, or `$KCA_LAB_STATE_ROOT`).
    pub state_root: PathBuf,
    /// Programs, images, chart; None: [`Inputs::resolve`].
    pub inputs: Option<Inputs>,
    /// Install Kyverno and the lab environment (default true).
    pub kyverno: bool,
    /// Keep a half-started cluster for debugging instead of tearing it down on failure.
    pub retain_on_failure: bool,
    /// Bound of each control-plane and node readiness wait (default 180 s).
    pub ready_timeout: Duration,
    /// Bound of each Kyverno wait (default 420 s).
    pub kyverno_timeout: Duration,
    /// Which Kubernetes and Kyverno to build and run when `inputs` is None (default: the pinned
    /// pair).
    pub versions: crate::upstream::Versions,
}

impl UpOptions {
    /// Defaults for cluster `name`; both bounds multiplied by [`wait_scale`].
    pub fn new(name: &str) -> UpOptions {
        let scale = wait_scale();
        UpOptions {
            name: name.to_string(),
            state_root: config::default_state_root(),
            inputs: None,
            kyverno: true,
            retain_on_failure: false,
            ready_timeout: Duration::from_secs(180) * scale,
            kyverno_timeout: Duration::from_secs(420) * scale,
            versions: crate::upstream::Versions::pinned(),
        }
    }
}

/// `$KCA_WAIT_SCALE` (a whole number 1..=10, default 1): how many times longer `up`'s readiness
/// bounds are. Only for a node under software emulation (`cargo xtask guest` sets 3: a TCG guest
/// on a loaded host took longer than 180 s for kube-apiserver's `/readyz`, docs/host.md).
pub fn wait_scale() -> u32 {
    std::env::var("KCA_WAIT_SCALE")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| (1..=10).contains(n))
        .unwrap_or(1)
}

/// A running cluster (handle over its state record).
#[derive(Debug, Clone)]
pub struct Cluster {
    record: ClusterRecord,
}

/// What `status` reports.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    /// Cluster name.
    pub name: String,
    /// `running` (every recorded process alive), `degraded` (some dead), `stopped` (remains, no
    /// process), `absent` (no state record).
    pub state: String,
    /// User kubeconfig path (cluster-admin).
    pub kubeconfig: Option<PathBuf>,
    /// CRI endpoint URL.
    pub cri_endpoint: Option<String>,
    /// State directory.
    pub state_dir: PathBuf,
    /// Node name.
    pub node_name: Option<String>,
    /// Node metadata.uid.
    pub node_uid: Option<String>,
    /// Node IP (node side of the veth; apiserver address).
    pub node_ip: Option<String>,
    /// Host side of the veth.
    pub host_ip: Option<String>,
    /// Network namespace name.
    pub netns: Option<String>,
    /// Whether the network namespace exists.
    pub netns_exists: bool,
    /// apiserver URL.
    pub apiserver: Option<String>,
    /// name → {pid, alive}.
    pub processes: Vec<serde_json::Value>,
    /// Phase timings of `up` (milliseconds since it began).
    pub timings_ms: std::collections::BTreeMap<String, u64>,
}

impl Cluster {
    /// User kubeconfig (cluster-admin client certificate; server `https://<node ip>:6443`).
    pub fn kubeconfig(&self) -> PathBuf {
        self.record.kubeconfig()
    }
    /// containerd's socket path (the node's CRI endpoint without `unix://`).
    pub fn cri_socket(&self) -> PathBuf {
        self.record.cri_socket()
    }
    /// CRI endpoint URL, `unix://<socket>`.
    pub fn cri_endpoint(&self) -> String {
        format!("unix://{}", self.cri_socket().display())
    }
    /// Node name (`kca-<cluster>`).
    pub fn node_name(&self) -> &str {
        &self.record.node_name
    }
    /// Node metadata.uid ("" only if `up` ran without waiting for the node, which it never does).
    pub fn node_uid(&self) -> &str {
        self.record.node_uid.as_deref().unwrap_or("")
    }
    /// State directory (logs under `logs/`).
    pub fn state_dir(&self) -> &Path {
        &self.record.state_dir
    }
    /// The API server's audit log (`<state>/audit/audit.log`, JSON lines, `0600`), which the lab
    /// reads through [`lab::audit::AuditSource::Log`]; removed with the state dir.
    pub fn audit_log(&self) -> PathBuf {
        self.record.state_dir.join(config::AUDIT_LOG)
    }
    /// Cluster name.
    pub fn name(&self) -> &str {
        &self.record.name
    }
    /// Node IP.
    pub fn node_ip(&self) -> std::net::Ipv4Addr {
        self.record.net.node_ip()
    }
    /// Network namespace name.
    pub fn netns(&self) -> &str {
        &self.record.netns
    }
    /// The state record (processes, timings).
    pub fn record(&self) -> &ClusterRecord {
        &self.record
    }

    /// Loads the handle of an existing cluster from its state record (None if there is none).
    pub fn load(name: &str, state_root: &Path) -> Result<Option<Cluster>> {
        config::validate_name(name)?;
        let state_dir = state_root.join(name);
        let Some(record) = ClusterRecord::load(&state_dir)? else {
            return Ok(None);
        };
        record.check_belongs(&state_dir)?;
        Ok(Some(Cluster { record }))
    }

    /// Brings a fresh cluster up and returns when Kyverno answers (see the module docs).
    ///
    /// Remains of a dead cluster of the same name are cleared first (and listed); a running
    /// cluster of the same name is an error. `<state_root>/<name>` is cleared only when it is
    /// this cluster's (its `cluster.json` or `kca-state-dir.json` names the same cluster and
    /// canonical directory) or empty; any other directory is refused and left untouched, as is a
    /// network namespace of that name that no record claims. On failure the half-started
    /// cluster is torn down unless `retain_on_failure`.
    pub fn up(opts: UpOptions) -> Result<Cluster> {
        host::require_root()?;
        {
            // Not while another cluster of this process has a daemon started but not yet in its
            // record ([`recorded_spawns`]): that daemon would look foreign.
            let _spawns = recorded_spawns();
            foreign::refuse_foreign(&opts.state_root)?;
        }
        config::validate_name(&opts.name)?;
        // Held until the daemons start ([`bring_up`]); they take it again around a host-wide
        // start (kubelet's, [`daemons::Daemon::host_wide`]).
        let mut host_wide = Some(host_steps());
        // The host's cgroup layout decides first: a host that cannot give kubelet its cgroup
        // controllers fails here, before any build, namespace or daemon.
        let cgroups = CgroupDecision::detect()?;
        if let Some(host::V2Plan::Refuse(why)) = &cgroups.plan {
            bail!("cgroup v2 host: {why}");
        }
        let inputs = match opts.inputs.clone() {
            Some(i) => i,
            None => Inputs::resolve_versions(&opts.versions)?,
        };
        std::fs::create_dir_all(&opts.state_root)
            .with_context(|| format!("creating {}", opts.state_root.display()))?;
        // Canonical, so the record names the directory itself (a copied record names another).
        let state_root = std::fs::canonicalize(&opts.state_root)
            .with_context(|| format!("resolving {}", opts.state_root.display()))?;
        let cfg = ClusterConfig {
            name: opts.name.clone(),
            state_root,
            bin_dir: inputs.bin_dir.clone(),
            cni_bin_dir: inputs.cni_bin_dir.clone(),
        };
        cfg.validate()?;
        clear_remains(&cfg)?;
        let started = Instant::now();
        make_state_dir(&cfg)?;
        let mut used = netns::used_indices()?;
        used.extend(other_clusters_indices(&cfg.state_root, &cfg.name));
        let net = netns::pick_free(&used)?;
        let mut rt = Runtime::new(&cfg, net);
        rt.cgroup_root = host::cgroup_root_for(&cfg.name, cgroups.plan.as_ref());
        rt.flag_changes = opts.versions.flag_changes()?;
        let mut record = ClusterRecord::new(&rt);
        inherit_host_paths(&mut record, &cfg.state_root);
        record.save()?;
        match bring_up(
            &rt,
            &mut record,
            &inputs,
            &opts,
            &cgroups,
            started,
            &mut host_wide,
        ) {
            Ok(()) => Ok(Cluster { record }),
            Err(e) => {
                // The teardown below changes what is host-wide again.
                let _host_wide = host_wide.take().unwrap_or_else(host_steps);
                if opts.retain_on_failure {
                    crate::status_line!(
                        "up failed; cluster {} retained for debugging (logs in {})",
                        rt.name,
                        rt.path("logs").display()
                    );
                    return Err(e);
                }
                crate::status_line!(
                    "up failed; tearing down what was started (logs kept in {})",
                    rt.path("logs").display()
                );
                let mut report = teardown::down(&record);
                finish_down(&record, &mut report, true);
                Err(e)
            }
        }
    }

    /// Tears the cluster down (see [`teardown`]); errors if any step failed (all are attempted).
    pub fn down(&self) -> Result<teardown::Report> {
        let _host_wide = host_steps();
        let mut report = teardown::down(&self.record);
        finish_down(&self.record, &mut report, true);
        if !report.errors.is_empty() {
            bail!(
                "cluster {} down finished with {} errors:\n{}",
                self.record.name,
                report.errors.len(),
                report.errors.join("\n")
            );
        }
        Ok(report)
    }

    /// Status of cluster `name` under `state_root`; reads only (plus a GET of the Node when the
    /// apiserver runs).
    pub fn status(name: &str, state_root: &Path) -> Result<Status> {
        config::validate_name(name)?;
        let state_dir = state_root.join(name);
        let Some(rec) = ClusterRecord::load(&state_dir)? else {
            return Ok(Status {
                name: name.into(),
                state: "absent".into(),
                kubeconfig: None,
                cri_endpoint: None,
                state_dir,
                node_name: None,
                node_uid: None,
                node_ip: None,
                host_ip: None,
                netns: None,
                netns_exists: netns::exists(&config::netns_name(name)),
                apiserver: None,
                processes: vec![],
                timings_ms: Default::default(),
            });
        };
        let alive: Vec<bool> = rec.processes.iter().map(|p| p.alive()).collect();
        let state = if !rec.processes.is_empty() && alive.iter().all(|a| *a) {
            "running"
        } else if alive.iter().any(|a| *a) {
            "degraded"
        } else {
            "stopped"
        };
        Ok(Status {
            name: rec.name.clone(),
            state: state.into(),
            kubeconfig: Some(rec.kubeconfig()),
            cri_endpoint: Some(format!("unix://{}", rec.cri_socket().display())),
            state_dir: rec.state_dir.clone(),
            node_name: Some(rec.node_name.clone()),
            node_uid: rec.node_uid.clone(),
            node_ip: Some(rec.net.node_ip().to_string()),
            host_ip: Some(rec.net.host_ip().to_string()),
            netns: Some(rec.netns.clone()),
            netns_exists: netns::exists(&rec.netns),
            apiserver: Some(format!("https://{}:{}", rec.net.node_ip(), config::APISERVER_PORT)),
            processes: rec
                .processes
                .iter()
                .zip(alive)
                .map(|(p, a)| serde_json::json!({"name": p.name, "pid": p.pid, "alive": a, "log": p.log}))
                .collect(),
            timings_ms: rec.timings_ms.clone(),
        })
    }
}

/// What [`host_steps`] hands out: held, no other `up` or teardown of this process changes what
/// is host-wide.
pub type HostSteps = std::sync::MutexGuard<'static, ()>;

/// Held through what each cluster's `up` and teardown change host-wide in this process (the
/// sysctls kubelet writes and `up` puts back, the cgroup root, the network namespaces' /30
/// indices, the host paths, iptables, the upstream cache): `up` from its start until its daemons
/// start ([`bring_up`]) and again around a host-wide daemon's start ([`Starter::start`]: kubelet
/// until the node is Ready and its sysctls are put back), teardown whole ([`Cluster::down`]). So
/// clusters of one process (the labs of `lab run --at-once`, the test lanes) never do those at
/// the same time, while the rest of one `up` (its API server, image import, Kyverno) runs
/// beside another's. Other processes are kept off by the machine
/// lock (`lab_run::ClusterLock`). Not reentrant: called by [`Cluster::up`] and
/// [`Cluster::down`] only, never around them.
fn host_steps() -> HostSteps {
    static HOST_STEPS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HOST_STEPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Held from a daemon's spawn until its record is saved with it ([`Starter::start`]), and through
/// `up`'s check for daemons no record owns ([`foreign::refuse_foreign`]), so that check never
/// sees another cluster's daemon of this process in that gap and refuses it as foreign (seen
/// 2026-12-04: the test lane of lab B refused the audit lane's containerd, started a moment
/// before). Other processes are kept off by the machine lock (`lab_run::ClusterLock`).
fn recorded_spawns() -> std::sync::MutexGuard<'static, ()> {
    static RECORDED_SPAWNS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RECORDED_SPAWNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Tears down cluster `name` from its state record alone (works after a crash); Ok(None) if
/// there is no record (a network namespace of that name is then left alone: no record says this
/// checkout made it).
///
/// # Errors
/// A record copied from another directory ([`ClusterRecord::check_belongs`]), or any failed
/// teardown step (all are attempted; the state dir is kept for a second `down`).
pub fn down_by_name(name: &str, state_root: &Path) -> Result<Option<teardown::Report>> {
    host::require_root()?;
    match Cluster::load(name, state_root)? {
        Some(c) => c.down().map(Some),
        None => {
            let ns = config::netns_name(name);
            if netns::exists(&ns) {
                crate::status_line!(
                    "   network namespace {ns} exists, but no state record under {} says this checkout made it: left alone (tear it down from the checkout that made it)",
                    state_root.display()
                );
            }
            Ok(None)
        }
    }
}

/// After a teardown: keep only `logs/` and the ownership marker of the state dir and drop the
/// record when everything was removed, so a failed `down` can be repeated. Never crosses a mount
/// point: when a mount remains under the state dir it removes nothing and reports the mounts.
fn finish_down(rec: &ClusterRecord, report: &mut teardown::Report, keep_logs: bool) {
    if !report.errors.is_empty() {
        return;
    }
    let keep: &[&str] = if keep_logs {
        &["logs", record::OWNER_FILE]
    } else {
        &[record::OWNER_FILE]
    };
    if let Err(e) = teardown::remove_contents(&rec.state_dir, keep) {
        report.fail(e);
    }
}

/// Adds to `record.host_paths_created` the fixed host paths ([`record::HOST_PATHS`]) that another
/// cluster of this boot under the same state root recorded creating: the cluster that goes down
/// last removes them (`down` leaves them while another cluster's kubelet runs). Whether the other
/// one's processes are alive does not matter: one still coming up has started none yet, and when
/// it made `/run/netns` first and went down first, nobody would be left to put it back. Keeps
/// deepest first.
fn inherit_host_paths(record: &mut ClusterRecord, state_root: &Path) {
    let Ok(rd) = std::fs::read_dir(state_root) else {
        return;
    };
    let mut all: Vec<PathBuf> = record.host_paths_created.clone();
    for e in rd.flatten() {
        if e.path() == record.state_dir {
            continue;
        }
        if let Ok(Some(other)) = ClusterRecord::load(&e.path())
            && other.same_boot()
        {
            all.extend(other.host_paths_created);
        }
    }
    record.host_paths_created = record::HOST_PATHS
        .iter()
        .map(PathBuf::from)
        .filter(|p| all.contains(p))
        .collect();
}

/// /30 indices recorded by other clusters' state dirs under `state_root`.
fn other_clusters_indices(state_root: &Path, me: &str) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(state_root) else {
        return vec![];
    };
    rd.flatten()
        .filter(|e| e.file_name() != me)
        .filter_map(|e| ClusterRecord::load(&e.path()).ok().flatten())
        .map(|r| r.net.index)
        .collect()
}

/// Creates the state dir `0700` and writes the ownership marker first (before anything else goes
/// in), so a later `up` or `down` recognises it as this cluster's.
fn make_state_dir(cfg: &ClusterConfig) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let state_dir = cfg.state_dir();
    match std::fs::DirBuilder::new().mode(0o700).create(&state_dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", state_dir.display())),
    }
    // The mode again: DirBuilder's is masked by the umask, and a kept dir may be older.
    std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("chmod 0700 {}", state_dir.display()))?;
    record::Owner {
        name: cfg.name.clone(),
        state_dir: state_dir.clone(),
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    }
    .save()
}

/// Whether `<state_root>/<name>` is this cluster's state dir: its `cluster.json` or its ownership
/// marker names the same cluster and the same directory. Ok(false) for an empty directory (or
/// none); an error, naming what was found, for anything else: a directory `up` did not make is
/// never cleared.
fn owned_state_dir(cfg: &ClusterConfig) -> Result<bool> {
    let state_dir = cfg.state_dir();
    let entries: Vec<String> = match std::fs::read_dir(&state_dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("reading {}", state_dir.display())),
    };
    if entries.is_empty() {
        return Ok(false);
    }
    let here = std::fs::canonicalize(&state_dir)
        .with_context(|| format!("resolving {}", state_dir.display()))?;
    let owner = record::Owner::load(&state_dir).ok().flatten();
    if owner
        .as_ref()
        .is_some_and(|o| o.name == cfg.name && o.state_dir == here)
    {
        return Ok(true);
    }
    let mut shown = entries.clone();
    shown.sort();
    shown.truncate(8);
    bail!(
        "{} exists and is not the state directory of cluster {} (no {} naming this cluster and this directory; it holds: {}); it was left untouched. Choose another --name or KCA_LAB_STATE_ROOT, or remove it yourself if it is an old cluster's",
        state_dir.display(),
        cfg.name,
        record::OWNER_FILE,
        shown.join(", ")
    )
}

/// Clears the remains of a dead cluster of the same name (its record present, processes gone),
/// saying what it cleared. Errors if the cluster still runs, if the directory is not a cluster
/// state dir ([`owned_state_dir`]), or if a network namespace of that name exists that no record
/// claims; in each case nothing is touched.
fn clear_remains(cfg: &ClusterConfig) -> Result<()> {
    let state_dir = cfg.state_dir();
    if let Some(rec) = ClusterRecord::load(&state_dir)? {
        rec.check_belongs(&state_dir)?;
        if rec.same_boot() && rec.processes.iter().any(|p| p.alive()) {
            bail!(
                "cluster {} is already running (state {}); run `cargo xtask cluster down --name {}` first",
                cfg.name,
                state_dir.display(),
                cfg.name
            );
        }
        refuse_foreign(&config::netns_name(&cfg.name), &state_dir)?;
        crate::status_line!(
            " • clearing the remains of a dead cluster {} (state {})",
            cfg.name,
            state_dir.display()
        );
        let mut report = teardown::down(&rec);
        finish_down(&rec, &mut report, false);
        if !report.errors.is_empty() {
            bail!(
                "clearing the remains of cluster {} failed:\n{}",
                cfg.name,
                report.errors.join("\n")
            );
        }
        if report.done.is_empty() {
            crate::status_line!("   nothing was left but the state directory");
        }
        return Ok(());
    }
    let ns = config::netns_name(&cfg.name);
    if netns::exists(&ns) {
        bail!(
            "network namespace {ns} exists but no state record under {} claims it (another checkout's cluster {}?); it was left alone. Tear it down from the checkout that made it, or choose another --name",
            cfg.state_root.display(),
            cfg.name
        );
    }
    if owned_state_dir(cfg)? {
        let mut report = teardown::Report::default();
        if let Err(e) = teardown::remove_contents(&state_dir, &[record::OWNER_FILE]) {
            report.fail(e);
            bail!(
                "clearing the old state of cluster {}: {}",
                cfg.name,
                report.errors.join("\n")
            );
        }
    }
    Ok(())
}

/// Fails when network namespace `ns` holds processes that are not of the cluster in `state_dir`:
/// a cluster of the same name started from another state root (another checkout) is running, and
/// its namespace, cgroups and processes must not be touched.
fn refuse_foreign(ns: &str, state_dir: &Path) -> Result<()> {
    if !netns::exists(ns) {
        return Ok(());
    }
    let sh = crate::command::shell()?;
    let out = crate::command::run(xshell::cmd!(sh, "ip netns pids {ns}"))?;
    let mine = state_dir.display().to_string();
    let foreign: Vec<String> = out
        .stdout
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
        .filter_map(|pid| {
            let cmd = procfs::process::Process::new(pid)
                .ok()?
                .cmdline()
                .ok()?
                .join(" ");
            let ours = cmd.contains(&mine) || cmd.is_empty() || cmd == "/pause";
            (!ours).then(|| format!("{pid} {}", cmd.chars().take(100).collect::<String>()))
        })
        .collect();
    if !foreign.is_empty() {
        bail!(
            "network namespace {ns} is in use by processes of another cluster of the same name (not under {}):
{}
choose another --name, or tear that cluster down from its own checkout",
            state_dir.display(),
            foreign.join("\n")
        );
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

/// Checks that every recorded daemon still runs; the error names the dead one and its log tail.
fn all_alive(record: &ClusterRecord) -> Result<()> {
    for p in &record.processes {
        if !p.alive() {
            bail!(
                "{} (pid {}) exited; last lines of {}:\n{}",
                p.name,
                p.pid,
                p.log,
                process::log_tail(&p.log, 25)
            );
        }
    }
    Ok(())
}

/// A readiness thread: the probe's value and when it passed (milliseconds since `up` began).
type ReadyThread<'scope> = std::thread::ScopedJoinHandle<'scope, Result<(String, u64)>>;

/// A step of `up` that runs on a daemon's readiness thread once its probe passed, as part of that
/// daemon being ready: the daemons gated on it wait for the step too.
type ReadyStep = fn(&Runtime, &Inputs) -> Result<()>;

/// `up`'s steps that belong to a daemon's readiness, `(daemon, step)`: once containerd answers,
/// [`import_images`], so kubelet (gated on containerd) never creates a sandbox whose image is
/// missing, and the import runs beside the API server's start.
const READY_STEPS: &[(&str, ReadyStep)] = &[(daemons::containerd::DAEMON.name, import_images)];

/// Imports every image of [`Inputs::images`] into containerd ([`kyverno::import_images`]).
fn import_images(rt: &Runtime, inputs: &Inputs) -> Result<()> {
    kyverno::import_images(rt, &inputs.images)
}

/// Starts the registry's daemons ([`daemons::REGISTRY`]) on one `std::thread::scope`: each
/// daemon waits for its [`daemons::Daemon::after`] gates (joining their readiness threads), runs
/// its `before_start`, is spawned and recorded, and its readiness probe (if any) is polled on a
/// thread of its own from then on, so what does not depend on it starts beside it.
struct Starter<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    rt: &'env Runtime,
    inputs: &'env Inputs,
    bound: Duration,
    started: Instant,
    /// Readiness threads not joined yet: name → (daemon, thread giving the probe's value and
    /// the milliseconds since `up` began when it was ready).
    pending: Vec<(&'static daemons::Daemon, ReadyThread<'scope>)>,
    /// Daemons whose readiness was collected.
    ready: Vec<&'static str>,
    /// The host steps, held from a host-wide daemon's start until it is ready
    /// ([`daemons::Daemon::host_wide`]).
    host_wide: Option<HostSteps>,
}

impl<'scope, 'env> Starter<'scope, 'env> {
    /// Starts `d` once its gates hold.
    fn start(&mut self, record: &mut ClusterRecord, d: &'static daemons::Daemon) -> Result<()> {
        for gate in d.after {
            self.wait_ready(record, gate)?;
        }
        if d.host_wide {
            self.host_wide = Some(host_steps());
        }
        if let Some(hook) = d.before_start {
            hook(self.rt, record).with_context(|| format!("before starting {}", d.name))?;
        }
        let spec = (d.spec)(self.rt);
        let step = Step::start(format!("starting {}", spec.name));
        {
            let _spawns = recorded_spawns();
            let p = process::spawn(&spec, &self.rt.netns)?;
            record.processes.push(p);
            record.save()?;
        }
        step.ok();
        let Some(r) = d.ready else {
            return Ok(());
        };
        // The daemons started so far must stay alive while it is probed.
        let alive = record.clone();
        let (rt, inputs, bound, started) = (self.rt, self.inputs, self.bound, self.started);
        let handle = self.scope.spawn(crate::status::with_label(
            move || -> Result<(String, u64)> {
                let value = wait_probe(&alive, &(r.what)(rt), bound, r.tick, || (r.probe)(rt))?;
                for (_, step) in READY_STEPS.iter().filter(|(name, _)| *name == d.name) {
                    step(rt, inputs)?;
                }
                Ok((value, ms(started)))
            },
        ));
        self.pending.push((d, handle));
        Ok(())
    }

    /// Whether `name`'s readiness was collected.
    fn is_ready(&self, name: &str) -> bool {
        self.ready.contains(&name)
    }

    /// Joins `name`'s readiness thread (if not yet), records its timing and runs its `on_ready`.
    fn wait_ready(&mut self, record: &mut ClusterRecord, name: &str) -> Result<()> {
        let Some(i) = self.pending.iter().position(|(d, _)| d.name == name) else {
            if self.is_ready(name) {
                return Ok(());
            }
            bail!("{name} is waited for, but it was not started with a readiness probe");
        };
        let (d, handle) = self.pending.remove(i);
        let (value, at_ms) = handle
            .join()
            .map_err(|_| anyhow::anyhow!("the readiness thread of {name} panicked"))??;
        let r = d.ready.expect("a pending daemon has a readiness probe");
        if let Some(key) = r.timing {
            record.timings_ms.insert(key.into(), at_ms);
        }
        if let Some(on_ready) = r.on_ready {
            on_ready(record, &value, self.started)?;
        }
        if d.host_wide {
            self.host_wide = None;
        }
        self.ready.push(d.name);
        Ok(())
    }

    /// Collects every readiness not collected yet, in start order.
    fn all_ready(&mut self, record: &mut ClusterRecord) -> Result<()> {
        while let Some((d, _)) = self.pending.first() {
            let name = d.name;
            self.wait_ready(record, name)?;
        }
        Ok(())
    }
}

/// The host's cgroup version and, on v2, its facts and the plan for kubelet's controllers
/// ([`host::plan_v2`]); made at the start of `up`.
#[derive(Debug, Clone)]
pub struct CgroupDecision {
    /// Host facts (capabilities, cgroup v1 or v2).
    pub host: HostFacts,
    /// v2 only: what the plan was made from.
    pub facts: Option<host::V2Facts>,
    /// v2 only: how kubelet's cgroup root gets its controllers.
    pub plan: Option<host::V2Plan>,
}

impl CgroupDecision {
    /// Reads the host ([`HostFacts::detect`], [`host::V2Facts::detect`]) and decides.
    pub fn detect() -> Result<CgroupDecision> {
        let host = HostFacts::detect()?;
        if host.cgroup_v1 {
            return Ok(CgroupDecision {
                host,
                facts: None,
                plan: None,
            });
        }
        let facts = host::V2Facts::detect()?;
        let plan = host::plan_v2(&facts);
        Ok(CgroupDecision {
            host,
            facts: Some(facts),
            plan: Some(plan),
        })
    }
}

/// `up`'s steps once the state dir and record exist, in order: [`preflight::check`] (nothing is
/// created or started before it passes), kubelet's cgroup root, the network namespace, the
/// node's files, then the daemons with Helm and Kyverno ([`start_node`]).
fn bring_up(
    rt: &Runtime,
    record: &mut ClusterRecord,
    inputs: &Inputs,
    opts: &UpOptions,
    cgroups: &CgroupDecision,
    started: Instant,
    host_wide: &mut Option<HostSteps>,
) -> Result<()> {
    preflight::check(rt, &cgroups.host)?;
    say_host(cgroups);
    give_cgroup_root_controllers(rt, record, cgroups)?;
    let step = Step::start(format!(
        "creating network namespace {} ({}, node IP {})",
        rt.netns,
        rt.net.cidr(),
        rt.net.node_ip()
    ));
    netns::create(rt, record)?;
    step.ok();
    write_node_files(rt, record, &cgroups.host)?;
    // What follows is this cluster's own (its processes in its namespace, its API server) but
    // for a host-wide daemon start, which takes the host steps again ([`Starter::start`]).
    host_wide.take();
    start_node(rt, record, inputs, opts, started)?;
    record.timings_ms.insert("up_ms".into(), ms(started));
    record.save()?;
    crate::status_line!(
        " ✓ cluster {} up in {:.1}s: kubeconfig {}",
        rt.name,
        started.elapsed().as_secs_f64(),
        rt.user_kubeconfig().display()
    );
    Ok(())
}

/// Prints the host facts `up` adapts to (CAP_SYS_RESOURCE, the cgroup layout and plan).
fn say_host(cgroups: &CgroupDecision) {
    let host = cgroups.host;
    crate::status_line!(
        " • host: CAP_SYS_RESOURCE {}, cgroup {}",
        if host.cap_sys_resource {
            "present"
        } else {
            "missing (containerd restrict_oom_score_adj = true)"
        },
        host::cgroup_line(
            host.cgroup_v1,
            cgroups.facts.as_ref(),
            cgroups.plan.as_ref()
        )
    );
}

/// Records the cgroup version and facts, then (cgroup v2) gives kubelet's cgroup root its
/// controllers by the plan ([`host::apply_v2`]), saving the record after each change.
fn give_cgroup_root_controllers(
    rt: &Runtime,
    record: &mut ClusterRecord,
    cgroups: &CgroupDecision,
) -> Result<()> {
    // kubelet's cgroup root and its controllers, before anything else is made.
    record.cgroup_changes = Some(host::CgroupChanges {
        version: if cgroups.host.cgroup_v1 { "v1" } else { "v2" }.into(),
        facts: cgroups.facts.clone(),
        ..Default::default()
    });
    record.save()?;
    if let Some(plan) = &cgroups.plan {
        let step = Step::start(format!(
            "giving kubelet's cgroup root {} its controllers",
            rt.cgroup_root
        ));
        let mut changes = record.cgroup_changes.clone().unwrap_or_default();
        let mut save = |c: &host::CgroupChanges| -> Result<()> {
            record.cgroup_changes = Some(c.clone());
            record.save()
        };
        host::apply_v2(&rt.name, plan, &mut changes, &mut save)?;
        step.ok();
    }
    Ok(())
}

/// Writes the node's PKI, kubeconfigs, containerd, CNI and kubelet configs and its directories,
/// then records and makes the cgroups the node needs.
fn write_node_files(rt: &Runtime, record: &mut ClusterRecord, host: &HostFacts) -> Result<()> {
    let step = Step::start("generating PKI and kubeconfigs");
    pki::generate(rt)?;
    kubeconfig::write_all(rt)?;
    write(
        &rt.path("containerd/config.toml"),
        &daemons::containerd::config_toml(rt, host),
    )?;
    let conflist = serde_json::to_string_pretty(&daemons::containerd::cni_conflist(rt))
        .context("rendering the CNI config")?;
    write(&rt.cni_conf_dir().join("10-kca.conflist"), &conflist)?;
    let kcfg = serde_yaml_ng::to_string(&daemons::kubelet::config(rt, host))
        .context("rendering the kubelet config")?;
    write(&rt.path("kubelet-config.yaml"), &kcfg)?;
    for d in ["kine", "kubelet", "pod-logs", "cni/ipam", "runc"] {
        std::fs::create_dir_all(rt.path(d))
            .with_context(|| format!("creating {}", rt.path(d).display()))?;
    }
    // Recorded before they are made, so `down` removes only the cgroups this cluster made.
    record.cgroups_created = host::missing_cgroups(&rt.cgroup_root)?;
    record.save()?;
    host::prepare_cgroups(&rt.cgroup_root)?;
    step.ok();
    Ok(())
}

/// Starts the registry in start order, each daemon's readiness polled on its own thread, so what
/// does not depend on the API server (containerd and the image import) starts beside it, and
/// Helm installs Kyverno as soon as the API server answers, while kubelet waits for the import;
/// then, with Kyverno, [`kyverno_answers`]. A host-wide daemon's start holds the process's host
/// steps until it is ready ([`Starter::start`]); the rest is this cluster's own, so another
/// cluster's `up` or teardown may run meanwhile.
fn start_node(
    rt: &Runtime,
    record: &mut ClusterRecord,
    inputs: &Inputs,
    opts: &UpOptions,
    started: Instant,
) -> Result<()> {
    std::thread::scope(|scope| -> Result<()> {
        let mut run = Starter {
            scope,
            rt,
            inputs,
            bound: opts.ready_timeout,
            started,
            pending: Vec::new(),
            ready: Vec::new(),
            host_wide: None,
        };
        let mut helm = None;
        for d in daemons::REGISTRY {
            run.start(record, d)?;
            if helm.is_none() && run.is_ready(daemons::apiserver::DAEMON.name) {
                helm = Some(match (opts.kyverno, inputs.chart_dir.as_ref()) {
                    (false, _) => None,
                    (true, None) => bail!("no Kyverno chart given (Inputs::chart_dir)"),
                    (true, Some(chart)) => {
                        Some(scope.spawn(crate::status::with_label(move || {
                            kyverno::helm_install(rt, chart)
                        })))
                    }
                });
            }
        }
        run.all_ready(record)?;
        if let Some(helm) = helm.flatten() {
            helm.join()
                .map_err(|_| anyhow::anyhow!("the helm install thread panicked"))??;
            kyverno_answers(rt, record, opts, started)?;
        }
        Ok(())
    })
}

/// Once Helm installed Kyverno: waits until its webhook answers (every daemon alive meanwhile),
/// records when, and creates the lab namespaces and the lab mark.
fn kyverno_answers(
    rt: &Runtime,
    record: &mut ClusterRecord,
    opts: &UpOptions,
    started: Instant,
) -> Result<()> {
    let rec2 = record.clone();
    let answer = kyverno::wait_ready(rt, opts.kyverno_timeout, move || all_alive(&rec2))?;
    // The probe is a ValidatingPolicy with a CEL expression that does not compile, sent as a
    // server-side dry-run: Kyverno's own policy webhook rejecting it is the answer looked for.
    crate::status_line!(
        "   Kyverno answered the readiness probe (a policy that must be rejected): {answer}"
    );
    record
        .timings_ms
        .insert("kyverno_answering_ms".into(), ms(started));
    kyverno::record_admission_start(&rt.user_kubeconfig());
    let step = Step::start("creating the lab namespaces and the lab mark");
    let (name, node) = (rt.name.clone(), rt.node_name.clone());
    let user = rt.user_kubeconfig();
    let uid = record.node_uid.clone().unwrap_or_default();
    ready::block_on(async {
        let c = ready::client(&user).await?;
        mark::apply(c, &name, &node, &uid).await
    })??;
    step.ok();
    Ok(())
}

fn wait_probe<T>(
    record: &ClusterRecord,
    what: &str,
    bound: Duration,
    tick: Duration,
    probe: impl FnMut() -> Result<T>,
) -> Result<T> {
    ready::wait(what, bound, tick, || all_alive(record), probe)
}

impl ClusterCmd {
    /// Runs the subcommand.
    pub fn run(self) -> Result<()> {
        let root = config::default_state_root();
        match self.cmd {
            Sub::Up {
                name,
                retain,
                no_kyverno,
                versions,
            } => {
                let mut opts = UpOptions::new(&name);
                opts.retain_on_failure = retain;
                opts.kyverno = !no_kyverno;
                opts.versions = versions.resolve()?;
                let _lock = crate::lock::ClusterLock::acquire(&root)?;
                let c = Cluster::up(opts)?;
                println!("kubeconfig: {}", c.kubeconfig().display());
                println!("cri_endpoint: {}", c.cri_endpoint());
                Ok(())
            }
            Sub::Down { name } => {
                let _lock = crate::lock::ClusterLock::acquire(&root)?;
                let t = Instant::now();
                match down_by_name(&name, &root)? {
                    Some(r) => crate::status_line!(
                        " ✓ cluster {name} down in {:.1}s ({} actions)",
                        t.elapsed().as_secs_f64(),
                        r.done.len()
                    ),
                    None => crate::status_line!(" ✓ no cluster {name}: nothing to do"),
                }
                Ok(())
            }
            Sub::Status { name, json } => {
                let s = Cluster::status(&name, &root)?;
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&s).context("serialising status")?
                    );
                } else {
                    println!("cluster {}: {}", s.name, s.state);
                    println!("  state dir:    {}", s.state_dir.display());
                    if let Some(k) = &s.kubeconfig {
                        println!("  kubeconfig:   {}", k.display());
                        println!(
                            "  cri endpoint: {}",
                            s.cri_endpoint.clone().unwrap_or_default()
                        );
                        println!(
                            "  node:         {} ({}) uid {}",
                            s.node_name.clone().unwrap_or_default(),
                            s.node_ip.clone().unwrap_or_default(),
                            s.node_uid.clone().unwrap_or_default()
                        );
                        println!(
                            "  netns:        {} (exists: {})",
                            s.netns.clone().unwrap_or_default(),
                            s.netns_exists
                        );
                        for p in &s.processes {
                            println!(
                                "  {:<24} pid {:<8} alive {}",
                                p["name"].as_str().unwrap_or(""),
                                p["pid"],
                                p["alive"]
                            );
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// The lab crate checks the mark before any fault; both sides must name the same ConfigMap.
    #[test]
    fn lab_mark_matches_the_lab_crate() {
        assert_eq!(super::mark::MARK_NAMESPACE, lab::cluster::MARK_NAMESPACE);
        assert_eq!(super::mark::MARK_NAME, lab::cluster::MARK_NAME);
        assert_eq!(super::mark::MARK_KEY, lab::cluster::MARK_KEY);
        assert_eq!(super::mark::MARK_VALUE, lab::cluster::MARK_VALUE);
    }
}
