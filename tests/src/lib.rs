//! Test harness: embedded clusters that are always torn down; a test binary shares one cluster
//! among its rows in order (a lane, [`lanes`]) unless a fresh node is what it tests.
//!
//! - [`LabCluster::fresh`] takes the cross-process cluster lock (`<state root>/.cluster.lock`,
//!   flock: one test process's clusters on the machine at a time; the lanes of one process share
//!   it, [`lanes::shared_lock`]), brings a fresh cluster up through `xtask::cluster` (the same
//!   code as `cargo xtask cluster up`) and returns when Kyverno answers.
//! - Dropping a [`LabCluster`] tears the cluster down, also while a test panics (the drop runs
//!   during unwinding); [`LabCluster::down`] does it explicitly and returns the errors.
//!   [`with_cluster`] runs a closure and always tears down, then re-raises a panic.
//! - Without root or off Linux, `fresh` fails with a message naming what is missing: cluster tests
//!   never skip silently.
//! - SIGINT, SIGTERM or SIGHUP to the test process (Ctrl-C, a killed CI job, a dropped ssh
//!   session) no longer leaves the cluster behind: the first fixture installs the lab's
//!   process-wide handler ([`lab::signals`]) and a thread that, on a signal, does what
//!   `cargo xtask lab run` does for every cluster this process holds, whatever its backend (one
//!   registry, `LIVE`): it lets an act with a live fault undo it first (≤ 35 s, while a
//!   [`lab::signals::Guard`] is held), copies the cluster's component logs to
//!   `target/lab-artifacts/test-<run id>/cluster-<name>/logs/`, ends the cluster as its
//!   backend's teardown does (embedded: torn down; k3s: the container removed; kubeconfig: the
//!   existing cluster left running, and said so), then exits with 130. A `Cluster::up` or a
//!   backend's acquire in progress stops at its next wait and ends what it started first (the
//!   thread waits for it, as registration happens under the registry's mutex), as does a
//!   teardown in progress.
//!
//! - The backend comes from one environment variable, `KCA_CLUSTER` (`embedded`, the default;
//!   `kubeconfig` with `KCA_KUBECONFIG`, `KCA_CRI_ENDPOINT`, `KCA_INSTALL_KYVERNO=1`,
//!   `KCA_MARK_AS_LAB=1`, `KCA_ALLOW_OTHER_VERSIONS=1`; `k3s` with `KCA_K3S_TAG`), read by
//!   [`xtask::backend::Backend::from_env`]. On the other backends [`LabCluster::fresh`] returns
//!   the backend's cluster (an existing cluster is never torn down; a k3s container is removed) and
//!   [`LabCluster::cluster`], which is the embedded handle, panics with a message saying so.
//!
//! Handles for the lab code: [`LabCluster::kubeconfig`] (path), [`LabCluster::cri_endpoint`]
//! (`unix://…`), [`LabCluster::node_name`], [`LabCluster::node_uid`], [`LabCluster::state_dir`].

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use xtask::cluster::{Cluster, UpOptions, record::ClusterRecord, teardown};

/// The cross-process lock file under the state root.
pub fn lock_path(state_root: &Path) -> PathBuf {
    state_root.join(".cluster.lock")
}

/// The exclusive cluster lock (held until dropped): the one `cargo xtask lab run` takes.
pub use xtask::lab_run::ClusterLock;

/// One cluster of this process that is up, as the signal thread ends it.
enum Live {
    /// An embedded cluster, ended by name (the fixture keeps its [`Cluster`] handle).
    Embedded {
        name: String,
        /// Its state root (the cluster's state dir is `<root>/<name>`).
        root: PathBuf,
        /// `target/lab-artifacts/test-<run id>/cluster-<name>/`.
        artifacts: PathBuf,
    },
    /// A kubeconfig or k3s backend's handle, owned here so that the signal thread can end it;
    /// the fixture refers to it by `id`.
    Backend {
        id: u64,
        handle: xtask::backend::ClusterHandle,
        /// As for `Embedded`.
        artifacts: PathBuf,
    },
}

/// Every cluster of this process that is up, of every backend, guarded by the one mutex that a
/// backend's acquire, teardown and the signal thread take, so the signal thread never races
/// them; an embedded `up` is counted in [`STARTING`] instead, so that several run at once.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// Embedded clusters of this process whose `up` is under way (not yet in [`LIVE`]): the signal
/// thread waits for them to come up or give up before it ends what [`LIVE`] holds.
static STARTING: (Mutex<usize>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

/// How long the signal thread waits for the `up`s under way ([`STARTING`]): each stops at its
/// next wait once a signal is pending and tears down what it started (a teardown is seconds;
/// 120 s leaves room for one that waits on another's host steps).
const STARTING_WAIT: Duration = Duration::from_secs(120);

/// One `up` under way, counted in [`STARTING`] until dropped.
struct Starting;

impl Starting {
    fn enter() -> Starting {
        *STARTING.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        Starting
    }

    /// Waits ≤ `bound` until no `up` is under way; says so when the bound passes.
    fn wait_none(bound: Duration) {
        let n = STARTING.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (n, waited) = STARTING
            .1
            .wait_timeout_while(n, bound, |n| *n > 0)
            .unwrap_or_else(PoisonError::into_inner);
        if waited.timed_out() {
            eprintln!(
                "   {} cluster up(s) still under way after {bound:?}: not waited for",
                *n
            );
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        *STARTING.0.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        STARTING.1.notify_all();
    }
}

/// How long the signal thread lets an act with a live fault undo it before it ends the clusters:
/// [`lab::signals::UNDO_BOUND`] (the acts' own bound) and 5 s to write the evidence.
const UNDO_WAIT: Duration = Duration::from_secs(lab::signals::UNDO_BOUND.as_secs() + 5);

/// Starts (once per process) the thread that, on SIGINT, SIGTERM or SIGHUP, ends every cluster
/// in [`LIVE`] ([`end_on_signal`]) and exits with 130 (see the module docs).
fn guard_signals() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        lab::signals::install();
        let spawned = std::thread::Builder::new()
            .name("kca-fixture-signals".into())
            .spawn(|| {
                let signal = match tokio::runtime::Builder::new_current_thread().build() {
                    Ok(rt) => rt.block_on(lab::signals::received()),
                    Err(e) => {
                        eprintln!("   the fixture's signal thread has no runtime ({e}): signals are only seen by acts");
                        return;
                    }
                };
                eprintln!(
                    " • {signal}: collecting logs and ending this test process's clusters, then exit 130"
                );
                let t = Instant::now();
                if lab::signals::guarded() {
                    eprintln!("   waiting ≤ {UNDO_WAIT:?} for the act with a live fault to undo it");
                    while lab::signals::guarded() && t.elapsed() < UNDO_WAIT {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    if lab::signals::guarded() {
                        eprintln!("   the act still holds its fault after {UNDO_WAIT:?}: its detached healer undoes it");
                    }
                }
                Starting::wait_none(STARTING_WAIT);
                let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
                for entry in live.drain(..) {
                    end_on_signal(entry);
                }
                std::process::exit(130);
            });
        if let Err(e) = spawned {
            eprintln!("   could not start the fixture's signal thread: {e}");
        }
    });
}

/// What the signal thread does for one cluster: collect its logs, then end it as its backend's
/// teardown does; every step says what it did on stderr (errors too: the others still run).
fn end_on_signal(entry: Live) {
    match entry {
        Live::Embedded {
            name,
            root,
            artifacts,
        } => {
            match xtask::lab_run::collect_cluster_logs(&root.join(&name), &artifacts) {
                Ok(()) => eprintln!(
                    "   logs of cluster {name} collected in {}",
                    artifacts.join("logs").display()
                ),
                Err(e) => eprintln!("   collecting the logs of cluster {name} failed: {e:#}"),
            }
            match xtask::cluster::down_by_name(&name, &root) {
                Ok(_) => eprintln!("   cluster {name} torn down"),
                Err(e) => eprintln!("   teardown of cluster {name} failed: {e:#}"),
            }
        }
        Live::Backend {
            handle, artifacts, ..
        } => {
            let (backend, name) = (handle.backend, handle.name.clone());
            match handle.collect_logs(&artifacts) {
                Ok(true) => eprintln!(
                    "   logs of the {backend} backend's cluster {name} collected in {}",
                    artifacts.join("logs").display()
                ),
                Ok(false) => eprintln!(
                    "   the {backend} backend's cluster {name} has no logs of ours to collect"
                ),
                Err(e) => eprintln!(
                    "   collecting the logs of the {backend} backend's cluster {name} failed: {e:#}"
                ),
            }
            let owns = handle.owns_cluster();
            match handle.teardown() {
                Ok(()) if owns => eprintln!("   the {backend} backend's cluster {name} ended"),
                Ok(()) => eprintln!(
                    "   the {backend} backend's cluster {name} left running (not ours to end)"
                ),
                Err(e) => {
                    eprintln!("   ending the {backend} backend's cluster {name} failed: {e:#}")
                }
            }
        }
    }
}

/// Tears `c` down holding [`LIVE`]'s mutex and removes it from the registry.
fn down_registered(c: Cluster) -> Result<teardown::Report> {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let r = c.down();
    live.retain(|l| !matches!(l, Live::Embedded { name, .. } if name == c.name()));
    r
}

/// Takes the backend handle `id` out of [`LIVE`] and ends it (its teardown) holding the mutex;
/// `Ok` when the signal thread already took it.
fn end_registered(id: u64) -> Result<()> {
    let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
    let at = live
        .iter()
        .position(|l| matches!(l, Live::Backend { id: i, .. } if *i == id));
    match at.map(|i| live.remove(i)) {
        Some(Live::Backend { handle, .. }) => handle.teardown(),
        _ => Ok(()),
    }
}

/// `target/lab-artifacts/test-<run id>/cluster-<name>/`: where the fixture leaves a cluster's
/// diagnostics (a failed `up`) and, on a signal, its component logs.
fn fixture_artifacts(name: &str) -> PathBuf {
    xtask::cluster::config::repo_root()
        .join("target/lab-artifacts")
        .join(format!("test-{}", xtask::lab_run::run_id()))
        .join(format!("cluster-{name}"))
}

/// After `up` or a backend's acquire failed with a signal pending: that step ended what it
/// started, and the signal thread ends the process's other clusters and exits 130; wait for it
/// (`live` released first) rather than return an error that could end the process first.
/// Bounded, in case that thread could not start: then the error is returned.
fn wait_for_signal_thread(
    live: Option<std::sync::MutexGuard<'_, Vec<Live>>>,
    e: anyhow::Error,
    what: &str,
) -> anyhow::Error {
    eprintln!("   {what} stopped: {e:#}");
    drop(live);
    std::thread::sleep(Duration::from_secs(300));
    e.context(format!("{what} (interrupted)"))
}

/// The plain facts of a non-embedded backend's cluster that [`LabCluster`] hands out (the
/// handle itself lives in [`LIVE`]).
#[derive(Debug)]
struct Other {
    /// Key of the handle in [`LIVE`].
    id: u64,
    backend: &'static str,
    name: String,
    kubeconfig: PathBuf,
    cri_endpoint: String,
    node_name: String,
    node_uid: String,
}

/// A fresh embedded cluster owned by one test; torn down on drop.
#[derive(Debug)]
pub struct LabCluster {
    cluster: Option<Cluster>,
    /// The cluster of a non-embedded backend (`KCA_CLUSTER`); its handle is in [`LIVE`].
    other: Option<Other>,
    up_secs: f64,
    /// The machine lock, shared by the clusters of this process ([`lanes::shared_lock`]).
    _lock: std::sync::Arc<ClusterLock>,
}

impl LabCluster {
    /// Brings up a fresh cluster named `name` (Kyverno answering, lab namespaces and mark in place).
    ///
    /// # Errors
    /// Not Linux or not root (message says so), another cluster of that name still running, or
    /// any step of `up` (the half-started cluster is torn down first).
    pub fn fresh(name: &str) -> Result<LabCluster> {
        Self::fresh_with(UpOptions::new(name))
    }

    /// [`LabCluster::fresh`] with explicit options.
    pub fn fresh_with(opts: UpOptions) -> Result<LabCluster> {
        xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
        let lock = lanes::shared_lock(&opts.state_root)?;
        Self::fresh_on(xtask::backend::Backend::from_env()?, opts, lock)
    }

    /// [`LabCluster::fresh_with`] for a caller that already holds the cluster lock (e.g. to
    /// snapshot the host before any cluster of the suite exists); the fixture keeps the lock.
    /// The backend is [`xtask::backend::Backend::from_env`]'s.
    pub fn fresh_locked(opts: UpOptions, lock: ClusterLock) -> Result<LabCluster> {
        let lock = lanes::adopt(lock);
        Self::fresh_on(xtask::backend::Backend::from_env()?, opts, lock)
    }

    /// [`LabCluster::fresh_locked`] on the backend given rather than `KCA_CLUSTER`'s: embedded, a
    /// fresh cluster from `opts`; otherwise the backend's [`xtask::backend::Backend::acquire`]
    /// named `opts.name` (only the name of `opts` is used). Either way the cluster is registered
    /// for the signal thread before this returns.
    ///
    /// # Errors
    /// Not root; the backend's acquire or `up` failed (what they started is ended first).
    pub fn fresh_on(
        backend: xtask::backend::Backend,
        opts: UpOptions,
        lock: std::sync::Arc<ClusterLock>,
    ) -> Result<LabCluster> {
        xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
        let t = Instant::now();
        let artifacts = fixture_artifacts(&opts.name);
        guard_signals();
        if backend != xtask::backend::Backend::Embedded {
            static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            // Held through the acquire, as through `up` below.
            let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
            let handle = match backend.acquire(&opts.name) {
                Ok(h) => h,
                Err(e) if lab::signals::pending().is_some() => {
                    let what = format!("the {} backend's acquire of {}", backend.name(), opts.name);
                    return Err(wait_for_signal_thread(Some(live), e, &what));
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("{} backend (KCA_CLUSTER)", backend.name()));
                }
            };
            let other = Other {
                id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                backend: handle.backend,
                name: handle.name.clone(),
                kubeconfig: handle.kubeconfig.clone(),
                cri_endpoint: handle.cri_endpoint.clone(),
                node_name: handle.node_name.clone(),
                node_uid: handle.node_uid.clone(),
            };
            live.push(Live::Backend {
                id: other.id,
                handle,
                artifacts,
            });
            return Ok(LabCluster {
                cluster: None,
                other: Some(other),
                up_secs: t.elapsed().as_secs_f64(),
                _lock: lock,
            });
        }
        // A failed `up` leaves its diagnostics (and the daemons' log tails) beside the lab runs'.
        let diag = artifacts.join("diagnostics");
        let cluster = {
            // Counted from here until the cluster is in `LIVE`: a signal now waits until `up`
            // returns (it stops at its next wait and tears down what it started), then finds the
            // cluster there. `LIVE` itself is not held through `up`, so the lanes' clusters come
            // up side by side (`up` runs what is host-wide one cluster at a time itself).
            let starting = Starting::enter();
            let cluster =
                match xtask::lab_run::diagnostics::up_with_diagnostics(opts.clone(), &diag) {
                    Ok(c) => c,
                    Err(e) if lab::signals::pending().is_some() => {
                        drop(starting);
                        let what = format!("bringing up cluster {}", opts.name);
                        return Err(wait_for_signal_thread(None, e, &what));
                    }
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("bringing up cluster {}", opts.name));
                    }
                };
            let root = cluster
                .state_dir()
                .parent()
                .map_or_else(|| opts.state_root.clone(), Path::to_path_buf);
            LIVE.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Live::Embedded {
                    name: cluster.name().to_owned(),
                    root,
                    artifacts,
                });
            drop(starting);
            cluster
        };
        Ok(LabCluster {
            cluster: Some(cluster),
            other: None,
            up_secs: t.elapsed().as_secs_f64(),
            _lock: lock,
        })
    }

    /// The cluster handle.
    pub fn cluster(&self) -> &Cluster {
        if let Some(h) = &self.other {
            panic!(
                "this test needs the embedded cluster's internals, but KCA_CLUSTER chose the {} backend",
                h.backend
            );
        }
        self.cluster.as_ref().expect("cluster present until down")
    }
    /// User kubeconfig (cluster-admin).
    pub fn kubeconfig(&self) -> PathBuf {
        match &self.other {
            Some(h) => h.kubeconfig.clone(),
            None => self.cluster().kubeconfig(),
        }
    }
    /// CRI endpoint URL (`unix:///…/containerd.sock`).
    pub fn cri_endpoint(&self) -> String {
        match &self.other {
            Some(h) => h.cri_endpoint.clone(),
            None => self.cluster().cri_endpoint(),
        }
    }
    /// Where the acts read the API server's audit log: the embedded node's
    /// `<state>/audit/audit.log`; none on the kubeconfig and k3s backends.
    pub fn audit(&self) -> lab::audit::AuditSource {
        match &self.other {
            Some(_) => lab::audit::AuditSource::NotConfigured,
            None => lab::audit::AuditSource::Log(self.cluster().audit_log()),
        }
    }
    /// Node name.
    pub fn node_name(&self) -> String {
        match &self.other {
            Some(h) => h.node_name.clone(),
            None => self.cluster().node_name().to_string(),
        }
    }
    /// Node metadata.uid.
    pub fn node_uid(&self) -> String {
        match &self.other {
            Some(h) => h.node_uid.clone(),
            None => self.cluster().node_uid().to_string(),
        }
    }
    /// State directory (other backends: `target/lab/backends/test-<name>`, created).
    pub fn state_dir(&self) -> PathBuf {
        match &self.other {
            Some(h) => xtask::backend::state_dir(&format!("test-{}", h.name))
                .unwrap_or_else(|_| std::env::temp_dir()),
            None => self.cluster().state_dir().to_path_buf(),
        }
    }
    /// Seconds `Cluster::up` took in this process.
    pub fn up_secs(&self) -> f64 {
        self.up_secs
    }

    /// Tears down now (another backend: its teardown; an existing cluster is left running); the
    /// error lists every step that failed.
    pub fn down(mut self) -> Result<teardown::Report> {
        if let Some(o) = self.other.take() {
            end_registered(o.id)?;
            return Ok(teardown::Report::default());
        }
        let c = self.cluster.take().expect("cluster present until down");
        down_registered(c)
    }
}

impl Drop for LabCluster {
    fn drop(&mut self) {
        if let Some(o) = self.other.take()
            && let Err(e) = end_registered(o.id)
        {
            eprintln!(
                "   teardown of the {} backend's cluster failed: {e:#}",
                o.backend
            );
        }
        if let Some(c) = self.cluster.take() {
            let name = c.name().to_owned();
            eprintln!(" • tearing down cluster {name} (fixture drop)");
            if let Err(e) = down_registered(c) {
                eprintln!("   teardown of cluster {name} failed: {e:#}");
            }
        }
    }
}

/// Runs `f` on a fresh cluster and always tears it down afterwards; a panic in `f` is re-raised
/// after the teardown, a teardown error is returned when `f` succeeded.
pub fn with_cluster<T>(name: &str, f: impl FnOnce(&LabCluster) -> Result<T>) -> Result<T> {
    let c = LabCluster::fresh(name)?;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&c)));
    let down = c.down();
    match r {
        Err(panic) => std::panic::resume_unwind(panic),
        Ok(Err(e)) => Err(e),
        Ok(Ok(v)) => down.map(|_| v),
    }
}

/// Builds the lab binary (`cargo build -p xtask -p lab --bin kca-webhook-lab`) once per test
/// process (so timed rows never include a `cargo build`) and returns its path.
pub fn ensure_lab_binary() -> Result<PathBuf> {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(b) = BIN.get() {
        return Ok(b.clone());
    }
    let b = xtask::lab_run::ensure_lab_binary()?;
    Ok(BIN.get_or_init(|| b).clone())
}

/// The student tool as a student runs it against a test cluster:
/// `kca-webhook-lab --lang en --lab LAB --workdir WORKDIR --kubeconfig KUBECONFIG --cri-endpoint
/// CRI_ENDPOINT ARGS`, stdin closed. Errors: the lab binary cannot be built.
pub fn student_command(
    lab: lab::evidence::Lab,
    workdir: &Path,
    kubeconfig: &Path,
    cri_endpoint: &Path,
    args: &[&str],
) -> Result<std::process::Command> {
    let mut c = std::process::Command::new(ensure_lab_binary()?);
    c.args(["--lang", "en", "--lab", lab.as_str(), "--workdir"])
        .arg(workdir)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cri-endpoint")
        .arg(cri_endpoint)
        .args(args)
        .stdin(std::process::Stdio::null());
    Ok(c)
}

/// Runs `cmd` to its end; its exit status and its stdout followed by its stderr. `what` names it
/// in the error when it cannot be started.
pub fn run_to_end(
    mut cmd: std::process::Command,
    what: &str,
) -> Result<(std::process::ExitStatus, String)> {
    let out = cmd.output().with_context(|| format!("running {what}"))?;
    Ok((
        out.status,
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    ))
}

/// Samples the resident memory of a cluster's whole stack (its recorded daemons, containerd shims
/// and every container process in its cgroups) every `interval` on a background thread.
pub struct MemorySampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<(u64, usize)>>,
}

/// Sum of VmRSS (bytes) of the cluster's processes now, and how many processes were counted.
pub fn stack_rss(rec: &ClusterRecord) -> (u64, usize) {
    let mut pids: Vec<i32> = rec
        .processes
        .iter()
        .filter(|p| p.alive())
        .map(|p| p.pid)
        .collect();
    pids.extend(teardown::stray_pids(rec).into_iter().map(|(p, _)| p));
    pids.sort();
    pids.dedup();
    let mut total = 0;
    for pid in &pids {
        if let Ok(st) = procfs::process::Process::new(*pid).and_then(|p| p.status()) {
            total += st.vmrss.unwrap_or(0) * 1024;
        }
    }
    (total, pids.len())
}

impl MemorySampler {
    /// Starts sampling the cluster whose state dir is `state_dir` (re-reading its record each time).
    pub fn start(state_dir: &Path, interval: Duration) -> MemorySampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s2 = stop.clone();
        let dir = state_dir.to_path_buf();
        let handle = std::thread::spawn(move || {
            let mut peak = (0u64, 0usize);
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(Some(rec)) = ClusterRecord::load(&dir) {
                    let s = stack_rss(&rec);
                    if s.0 > peak.0 {
                        peak = s;
                    }
                }
                std::thread::sleep(interval);
            }
            peak
        });
        MemorySampler {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops and returns (peak bytes, processes counted at the peak).
    pub fn finish(mut self) -> (u64, usize) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or((0, 0))
    }
}

impl Drop for MemorySampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Appends one measured figure (JSON object) to `<state root>/figures.jsonl` and prints it.
pub fn record_figure(state_root: &Path, figure: serde_json::Value) -> Result<()> {
    use std::io::Write;
    eprintln!("   figure: {figure}");
    std::fs::create_dir_all(state_root)
        .with_context(|| format!("creating {}", state_root.display()))?;
    let path = state_root.join("figures.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(f, "{figure}").with_context(|| format!("writing {}", path.display()))
}

/// State shared by one lab's ordered act tests (one libtest-mimic trial per act): the lab's
/// cluster and lab run, made on first use, and the first step that failed.
#[derive(Default)]
pub struct OrderedLab {
    /// The cluster, once set up.
    pub cluster: Option<LabCluster>,
    /// The lab run on that cluster, once set up.
    pub run: Option<xtask::lab_run::LabRun>,
    /// The name of the first step that failed (setup included); later steps are not run.
    pub failed: Option<String>,
}

/// Runs one ordered step of a lab: sets the cluster up on first use (with `setup`), refuses with
/// "not run: X failed earlier" when an earlier step failed, turns a panic into a failure, and
/// records a failure so that the later steps refuse too.
pub fn ordered_step(
    state: &std::sync::Mutex<OrderedLab>,
    what: &str,
    setup: impl FnOnce() -> Result<(LabCluster, xtask::lab_run::LabRun)>,
    f: impl FnOnce(&xtask::lab_run::LabRun) -> std::result::Result<(), libtest_mimic::Failed>,
) -> std::result::Result<(), libtest_mimic::Failed> {
    ordered_step_on(state, what, setup, |_, run| f(run))
}

/// [`ordered_step`] for a step that needs the cluster itself too (its fixture handle).
pub fn ordered_step_on(
    state: &std::sync::Mutex<OrderedLab>,
    what: &str,
    setup: impl FnOnce() -> Result<(LabCluster, xtask::lab_run::LabRun)>,
    f: impl FnOnce(
        &LabCluster,
        &xtask::lab_run::LabRun,
    ) -> std::result::Result<(), libtest_mimic::Failed>,
) -> std::result::Result<(), libtest_mimic::Failed> {
    use libtest_mimic::Failed;
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(first) = &s.failed {
        return Err(format!("not run: {first} failed earlier").into());
    }
    if s.run.is_none() {
        match setup() {
            Ok((c, r)) => {
                s.cluster = Some(c);
                s.run = Some(r);
            }
            Err(e) => {
                s.failed = Some("cluster setup".into());
                return Err(format!("{e:#}").into());
            }
        }
    }
    let run = s.run.as_ref().expect("set above");
    let cluster = s.cluster.as_ref().expect("set with the run");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(cluster, run)));
    let r = match r {
        Ok(r) => r,
        Err(p) => Err(Failed::from(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        ))),
    };
    if r.is_err() {
        s.failed = Some(what.to_owned());
    }
    r
}

/// `target/lab-artifacts/test-<run id>/<lab>/`: where one lab's ordered act test keeps what it
/// observed (one run id per test process).
pub fn ordered_artifacts(lab: lab::evidence::Lab) -> PathBuf {
    static RUN_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let id = RUN_ID.get_or_init(|| format!("test-{}", xtask::lab_run::run_id()));
    xtask::lab_run::artifacts_dir(id, lab)
}

/// Sets up one lab's ordered act test: a fresh embedded cluster named `cluster_name` and a lab run
/// of `lab` on it, with its work dir at `<artifacts>/workdir` and the cluster's audit log.
///
/// Errors: the lab binary cannot be built, the cluster does not come up, or the work dir cannot be
/// made.
pub fn ordered_setup(
    lab: lab::evidence::Lab,
    cluster_name: &str,
    artifacts: &Path,
) -> Result<(LabCluster, xtask::lab_run::LabRun)> {
    ensure_lab_binary()?;
    let cluster = LabCluster::fresh(cluster_name)?;
    let workdir = artifacts.join("workdir");
    let mut run = xtask::lab_run::LabRun::new(
        lab,
        &workdir,
        &cluster.kubeconfig(),
        &cluster.cri_endpoint(),
    )?;
    run.env.audit = cluster.audit();
    eprintln!(
        "    cluster {cluster_name} up in {:.0}s; workdir {}",
        cluster.up_secs(),
        workdir.display()
    );
    Ok((cluster, run))
}

/// Ends one lab's ordered act test (a lane's end, [`lanes::Lane`]): keeps what was observed
/// (inputs, evidence, fault files, grades, webhooks, component logs) under `artifacts` and tears
/// the cluster down.
///
/// # Errors
/// The teardown failed (the message names the cluster); a failure to keep artifacts is said on
/// stderr and is not an error.
pub fn end_ordered(
    state: &Mutex<OrderedLab>,
    label: &str,
    cluster_name: &str,
    artifacts: &Path,
) -> std::result::Result<(), String> {
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    if let (Some(run), Some(c)) = (&s.run, &s.cluster) {
        let saved = xtask::lab_run::save_artifacts(run, artifacts)
            .and_then(|_| xtask::lab_run::collect_cluster_logs(&c.state_dir(), artifacts));
        match saved {
            Ok(()) => eprintln!("{label} test artifacts: {}", artifacts.display()),
            Err(e) => eprintln!("saving artifacts to {} failed: {e:#}", artifacts.display()),
        }
    }
    s.run = None;
    if let Some(c) = s.cluster.take() {
        c.down()
            .map_err(|e| format!("teardown of {cluster_name} failed: {e:#}"))?;
    }
    Ok(())
}

pub mod host;
pub mod lanes;

/// Assertions shared by every lab's ordered act tests. Each returns a `Failed` that says what was
/// expected and what was observed.
pub mod acts {
    use lab::evidence::{Lab, Outcome, RequestRecord};
    use lab::facts::{Act1Facts, Act2Facts, Act3Facts, PodObservation};
    use libtest_mimic::Failed;
    use xtask::lab_run::LabRun;

    /// Act 1 (every lab) against the cluster read again by the test: the node's and both lab
    /// namespaces' UIDs in the facts are the live ones, and the lab mark was found (the test
    /// clusters carry it).
    pub fn act1_matches_the_live_cluster(run: &LabRun, f: &Act1Facts) -> Result<(), Failed> {
        let (node, uids) = run
            .block_on(async {
                let cl = run.env.cluster().await?;
                let node = cl.node().await?;
                let uids = cl
                    .namespace_uids(&[
                        lab::rules::common::TARGET_NAMESPACE,
                        lab::rules::common::CONTROL_NAMESPACE,
                    ])
                    .await?;
                Ok::<_, lab::error::LabError>((node, uids))
            })
            .map_err(|e| Failed::from(format!("act 1: reading the live cluster: {e}")))?;
        ensure(
            f.node.uid == node.uid,
            &format!("act 1: node uid {} is the live {}", f.node.uid, node.uid),
        )?;
        for (name, live) in &uids {
            let recorded = f.namespaces.get(name);
            ensure(
                live.is_some() && recorded == live.as_ref(),
                &format!("act 1: namespace {name} uid {recorded:?} is the live {live:?}"),
            )?;
        }
        ensure(
            f.lab_mark.is_some(),
            "act 1: the lab mark is found on a lab cluster",
        )
    }

    /// Act 2 (every lab): the policy's webhook is registered as the spec asks (failurePolicy
    /// `Fail`, timeoutSeconds 3), and the registration the act recorded is in the live
    /// ValidatingWebhookConfigurations read again by the test.
    pub fn act2_registers_the_fail_webhook(run: &LabRun, f: &Act2Facts) -> Result<(), Failed> {
        ensure(
            f.webhook.failure_policy == "Fail" && f.webhook.timeout_seconds == 3,
            &format!(
                "act 2: failurePolicy Fail, timeoutSeconds 3; recorded {} {}",
                f.webhook.failure_policy, f.webhook.timeout_seconds
            ),
        )?;
        ensure(
            f.policy
                .pointer("/metadata/uid")
                .and_then(|u| u.as_str())
                .is_some(),
            "act 2: the stored policy has a UID",
        )?;
        let live = run
            .webhook_snapshot()
            .map_err(|e| Failed::from(format!("act 2: {e:#}")))?;
        let found = live.as_array().into_iter().flatten().any(|cfg| {
            cfg.pointer("/metadata/name").and_then(|n| n.as_str()) == Some(&f.webhook.configuration)
                && cfg["webhooks"].as_array().into_iter().flatten().any(|w| {
                    w["name"].as_str() == Some(&f.webhook.name)
                        && w["failurePolicy"].as_str() == Some("Fail")
                })
        });
        ensure(
            found,
            &format!(
                "act 2: webhook {} in configuration {} is live with failurePolicy Fail",
                f.webhook.name, f.webhook.configuration
            ),
        )
    }

    /// The request's classified outcome is `want`; otherwise the raw status, message and elapsed ms.
    pub fn expect(r: &RequestRecord, want: Outcome, label: &str) -> Result<(), Failed> {
        if r.outcome == want {
            Ok(())
        } else {
            Err(format!(
                "{label}: expected {}, got {} (HTTP {}, {:?}, {} ms)",
                want.as_str(),
                r.outcome.as_str(),
                r.http_status,
                r.message,
                r.elapsed_ms
            )
            .into())
        }
    }

    /// `cond` holds; otherwise "expected: {what}".
    pub fn ensure(cond: bool, what: &str) -> Result<(), Failed> {
        if cond {
            Ok(())
        } else {
            Err(format!("expected: {what}").into())
        }
    }

    /// The pod seen now is act 3's existing pod (same UID) and Running.
    pub fn existing_survives(run: &LabRun, seen: &PodObservation) -> Result<(), Failed> {
        let a3: Act3Facts = serde_json::from_value(run.workdir().read_evidence(3)?.evidence.facts)?;
        ensure(
            seen.uid.is_some() && seen.uid == a3.existing.uid,
            "existing pod keeps act 3's UID",
        )?;
        ensure(
            seen.phase.as_deref() == Some("Running"),
            "existing pod Running",
        )
    }

    /// Act `act` passes its grader on the evidence the run saved; the error names every finding
    /// (code, subject, detail) and the number of checks.
    pub fn graded(run: &LabRun, act: u8) -> Result<(), Failed> {
        let g = run.grade(act);
        if g.passed() {
            return Ok(());
        }
        Err(format!(
            "grade {act}: {} checks, findings: {}",
            g.checks,
            g.findings
                .iter()
                .map(|f| format!("{} {}: {}", f.code.as_str(), f.subject, f.detail))
                .collect::<Vec<_>>()
                .join("; ")
        )
        .into())
    }

    /// Every act of `lab` passes its grader on the saved evidence.
    pub fn grade_all(run: &LabRun, lab: Lab) -> Result<(), Failed> {
        let input = lab::grade::GradeInput::load(run.workdir(), lab);
        let all = lab::grade::grade_all(lab, &input);
        let failed: Vec<_> = all.iter().filter(|f| !f.passed()).collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(format!("grades failing: {failed:?}").into())
        }
    }
}
