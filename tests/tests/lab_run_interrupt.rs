//! `cargo xtask lab run` on Ctrl-C (issue 12): a real `target/debug/xtask lab run` (the three
//! labs at once, each on its own embedded cluster: the default) gets SIGINT while lab B's act 5
//! freeze of Kyverno is live (labs A and C wherever they are then: coming up, or in an act with
//! or without a fault), then SIGTERM while it tears lab B's cluster down. Asserted: exit code
//! 130; the freeze healer's record says resumed and the Kyverno process was no longer stopped
//! (`T`) when it looked; act 5's evidence is `interrupted` with its raw data; the artifacts
//! (evidence, fault ledgers, component logs, grades, report pages) are there, each lab's report
//! pages too; every cluster is gone (none of its recorded processes or strays alive, no network
//! namespace, no state record; each cluster's record is read again all along, so processes it
//! started late are known). Time from SIGINT to resumed and to exit are printed as figures, not
//! asserted.
//!
//! The test fixture's rows (a child test process holding `tests::LabCluster`): SIGTERM during
//! `up` and SIGHUP with the embedded cluster up end in exit 130 with nothing of the cluster left
//! and, for the cluster that was up, its component logs collected; SIGTERM with the fixture on the
//! `kubeconfig` backend ends in exit 130 with the existing cluster (an embedded cluster the child
//! started on its own first, as `cargo xtask cluster up` would) still running, the same processes,
//! node and Kyverno answering, and the child saying it left it running; the test then tears it
//! down. The k3s backend's path (its container removed on a signal) needs Docker and is not run
//! here.
//!
//! Custom harness (`harness = false`). The child takes the machine-wide cluster lock itself, so
//! this test does not take it (run it under `flock /work/cluster.lock` as every cluster test).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use lab::evidence::Evidence;
use lab::faults::freeze::{FreezeLedger, HealerReport};
use lab::faults::process::ProcessRef;
use lab::faults::process::state_if_same;
use libtest_mimic::{Arguments, Failed, Trial};
use xtask::cluster::record::ClusterRecord;

/// Bound on the run reaching act 5's live freeze: cluster lock, `up` (32-51 s measured), acts 1-4.
const FROZEN_BOUND: Duration = Duration::from_secs(12 * 60);
/// Bound on the run exiting after SIGINT: act 5's undo (≤ 30 s), heal, artifacts, teardown.
const EXIT_BOUND: Duration = Duration::from_secs(5 * 60);
/// Bound on the run starting its teardown after SIGINT.
const TEARDOWN_BOUND: Duration = Duration::from_secs(3 * 60);

/// The fixture child's cluster name.
const FIXTURE_CLUSTER: &str = "sigfix";
/// The existing cluster the kubeconfig fixture child starts on its own.
const EXISTING_CLUSTER: &str = "sigkcfg";

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--fixture-child") {
        std::process::exit(fixture_child());
    }
    if argv.get(1).map(String::as_str) == Some("--fixture-kubeconfig-child") {
        std::process::exit(fixture_kubeconfig_child());
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let trials = vec![
        Trial::test(
            "at_once_sigint_mid_freeze_then_sigterm_in_teardown_heals_collects_tears_every_cluster_down_exits_130",
            || interrupt_test().map_err(|e| Failed::from(format!("{e:#}"))),
        ),
        Trial::test(
            "lab_run_sigint_during_cluster_up_tears_down_exits_130",
            || lab_run_during_up_test().map_err(|e| Failed::from(format!("{e:#}"))),
        ),
        Trial::test(
            "fixture_sigterm_during_cluster_up_tears_down_exits_130",
            || {
                fixture_test(rustix::process::Signal::TERM, "waiting ≤")
                    .map_err(|e| Failed::from(format!("{e:#}")))
            },
        ),
        Trial::test(
            "fixture_sighup_with_the_cluster_up_collects_logs_tears_down_exits_130",
            || {
                fixture_test(rustix::process::Signal::HUP, "fixture-up")
                    .map_err(|e| Failed::from(format!("{e:#}")))
            },
        ),
        Trial::test(
            "fixture_on_kubeconfig_backend_sigterm_leaves_the_existing_cluster_running_exits_130",
            || fixture_kubeconfig_test().map_err(|e| Failed::from(format!("{e:#}"))),
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// Child mode: a test holding the cluster fixture; prints `fixture-up` and waits (≤ 10 min).
fn fixture_child() -> i32 {
    match tests::LabCluster::fresh(FIXTURE_CLUSTER) {
        Ok(c) => {
            eprintln!("fixture-up");
            std::thread::sleep(Duration::from_secs(600));
            drop(c);
            0
        }
        Err(e) => {
            eprintln!("fixture failed: {e:#}");
            1
        }
    }
}

/// Child mode: starts cluster [`EXISTING_CLUSTER`] on its own (not through the fixture, as
/// `cargo xtask cluster up` would), then holds the fixture on the `kubeconfig` backend over it;
/// prints `fixture-up` and waits (≤ 10 min). The existing cluster is left for the test to end.
fn fixture_kubeconfig_child() -> i32 {
    let held = (|| -> Result<tests::LabCluster> {
        let up = xtask::cluster::UpOptions::new(EXISTING_CLUSTER);
        let lock = xtask::lab_run::ClusterLock::acquire(&up.state_root)?;
        let existing = xtask::cluster::Cluster::up(up.clone())
            .context("starting the existing cluster on its own")?;
        eprintln!("existing-up");
        let cri = existing.cri_endpoint();
        let opts = xtask::backend::kubeconfig::Options::resolve(
            Some(&existing.kubeconfig()),
            Some(Path::new(&cri)),
            false,
            false,
            false,
        )?;
        tests::LabCluster::fresh_on(
            xtask::backend::Backend::Kubeconfig(opts),
            up,
            tests::lanes::adopt(lock),
        )
    })();
    match held {
        Ok(c) => {
            eprintln!("fixture-up");
            std::thread::sleep(Duration::from_secs(600));
            drop(c);
            0
        }
        Err(e) => {
            eprintln!("fixture failed: {e:#}");
            1
        }
    }
}

/// Starts the fixture child, sends `sig` once its log shows `when`, and requires exit 130 and
/// nothing of its cluster left (recorded processes, strays, network namespace, record); when the
/// cluster was up (`when` is `fixture-up`), also its component logs collected where the child says.
fn fixture_test(sig: rustix::process::Signal, when: &str) -> Result<()> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--fixture-child");
    let log = signal_child_test(cmd, FIXTURE_CLUSTER, sig, when)?;
    if when == "fixture-up" {
        let prefix = format!("logs of cluster {FIXTURE_CLUSTER} collected in ");
        let dir = log
            .lines()
            .find_map(|l| l.trim().strip_prefix(&prefix))
            .with_context(|| format!("the child did not say `{prefix}…`:\n{}", last_lines(&log)))?;
        let logs: Vec<String> = std::fs::read_dir(dir)
            .with_context(|| format!("reading the collected logs {dir}"))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        ensure!(
            logs.iter().any(|f| f.starts_with("kube-apiserver")),
            "no kube-apiserver log among the collected logs in {dir}: {logs:?}"
        );
        eprintln!("   collected on {sig:?}: {} logs in {dir}", logs.len());
    }
    Ok(())
}

/// Tears cluster `0` down under the cluster lock when dropped (the existing cluster the
/// kubeconfig row's child leaves running), also when the test fails.
struct DownAfter(&'static str, PathBuf);

impl Drop for DownAfter {
    fn drop(&mut self) {
        if ClusterRecord::load(&self.1.join(self.0)).is_ok_and(|r| r.is_some()) {
            eprintln!("   tearing down the existing cluster {}", self.0);
            let _lock = xtask::lab_run::ClusterLock::acquire(&self.1);
            if let Err(e) = xtask::cluster::down_by_name(self.0, &self.1) {
                eprintln!("   teardown of {} failed: {e:#}", self.0);
            }
        }
    }
}

/// The fixture on the kubeconfig backend gets SIGTERM: exit 130, the child says the existing
/// cluster is left running, and it is: the same processes alive (PID + start time), the same
/// node, the network namespace there, and the kubeconfig backend acquires it again (Kubernetes
/// and Kyverno pinned, Kyverno's webhook answering). Then the test tears it down and requires
/// nothing of it left.
fn fixture_kubeconfig_test() -> Result<()> {
    xtask::cluster::host::require_root().context("this test runs a real cluster")?;
    let state_root = xtask::cluster::UpOptions::new(EXISTING_CLUSTER).state_root;
    let _down = DownAfter(EXISTING_CLUSTER, state_root.clone());
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--fixture-kubeconfig-child");
    let sig = rustix::process::Signal::TERM;
    let (status, log, record) =
        signal_child(cmd, EXISTING_CLUSTER, sig, "fixture-up", &state_root)?;
    let tail = last_lines(&log);
    ensure!(
        status.code() == Some(130),
        "exit 130 expected, got {status}:\n{tail}"
    );
    let said = format!("the kubeconfig backend's cluster {EXISTING_CLUSTER} left running");
    ensure!(
        log.contains(&said),
        "the child should say `{said}`:\n{tail}"
    );

    // Still up: nothing ended, nothing restarted.
    let lock = xtask::lab_run::ClusterLock::acquire(&state_root)?;
    let dead: Vec<_> = record
        .processes
        .iter()
        .filter(|p| !p.alive())
        .map(|p| &p.name)
        .collect();
    ensure!(
        dead.is_empty(),
        "processes of the existing cluster ended by the signal:{dead:?}\n{tail}"
    );
    let status = xtask::cluster::Cluster::status(EXISTING_CLUSTER, &state_root)?;
    ensure!(
        status.state == "running" && status.netns_exists && status.node_uid == record.node_uid,
        "the existing cluster should run on, as before: {status:?}"
    );
    let existing = xtask::cluster::Cluster::load(EXISTING_CLUSTER, &state_root)?
        .context("the existing cluster's record is gone")?;
    let cri = existing.cri_endpoint();
    let opts = xtask::backend::kubeconfig::Options::resolve(
        Some(&existing.kubeconfig()),
        Some(Path::new(&cri)),
        false,
        false,
        false,
    )?;
    let t = Instant::now();
    let again = xtask::backend::Backend::Kubeconfig(opts)
        .acquire(EXISTING_CLUSTER)
        .context("acquiring the existing cluster again after the signal")?;
    eprintln!(
        "   figure: the existing cluster acquired again (Kyverno answering) {} ms after the check began",
        t.elapsed().as_millis()
    );
    ensure!(
        Some(&again.node_uid) == record.node_uid.as_ref(),
        "acquired again, node uid {} should be {:?}",
        again.node_uid,
        record.node_uid
    );
    again.teardown()?;

    // The test ends it, and nothing of it is left.
    existing.down()?;
    drop(lock);
    ensure_gone(&record, &state_root, EXISTING_CLUSTER, &tail)
}

/// `xtask lab run --lab b` gets SIGINT during `cluster up` (its first bounded wait): `up` stops
/// and tears down what it started; exit 130, nothing of cluster `labb` left.
fn lab_run_during_up_test() -> Result<()> {
    let xtask_bin = xtask::lab_run::build_bin("xtask", "xtask")?;
    let mut cmd = Command::new(xtask_bin);
    cmd.args(["lab", "run", "--lab", "b", "--run-id"])
        .arg(format!(
            "interrupt-up-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ")
        ))
        .current_dir(xtask::cluster::config::repo_root());
    signal_child_test(cmd, "labb", rustix::process::Signal::INT, "waiting ≤").map(drop)
}

/// Starts `cmd` (which brings cluster `cluster` up under the default state root), sends `sig`
/// once its log shows `when`, and requires exit 130 and nothing of the cluster left (recorded
/// processes, strays, network namespace, record). Returns the child's whole log.
fn signal_child_test(
    cmd: Command,
    cluster: &'static str,
    sig: rustix::process::Signal,
    when: &str,
) -> Result<String> {
    xtask::cluster::host::require_root().context("this test runs a real cluster")?;
    let state_root = xtask::cluster::UpOptions::new(cluster).state_root;
    let (status, log, record) = signal_child(cmd, cluster, sig, when, &state_root)?;
    let tail = last_lines(&log);
    ensure!(
        status.code() == Some(130),
        "exit 130 expected, got {status}:\n{tail}"
    );
    ensure_gone(&record, &state_root, cluster, &tail)?;
    Ok(log)
}

/// Whether `log` has a line with `when` that is not the wait for the machine lock: `waiting ≤`
/// marks the cluster coming up, but a child that first waits for another checkout's cluster (the
/// lock's `waiting ≤ 120 min for the cluster lock`) has not started one yet, and a signal there
/// would test nothing of `up`.
fn shows_step(log: &str, when: &str) -> bool {
    log.lines()
        .any(|l| l.contains(when) && !l.contains("for the cluster lock"))
}

/// Starts `cmd` (which brings cluster `cluster` up under `state_root`), sends `sig` once its log
/// shows `when` and waits (≤ [`EXIT_BOUND`]) until it exits. Returns its exit status, its whole
/// log and the cluster's record as it was when the signal was sent.
fn signal_child(
    mut cmd: Command,
    cluster: &'static str,
    sig: rustix::process::Signal,
    when: &str,
    state_root: &Path,
) -> Result<(std::process::ExitStatus, String, ClusterRecord)> {
    let dir = xtask::cluster::config::default_state_root().join(format!(
        "signal-{cluster}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ")
    ));
    std::fs::create_dir_all(&dir)?;
    let log = dir.join("child.log");
    let logfile = std::fs::File::create(&log)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(logfile.try_clone()?)
        .stderr(logfile)
        .spawn()?;
    let mut run = Run::new(child, &log, state_root, vec![cluster]);
    let t0 = Instant::now();
    loop {
        if run.exited()?.is_some() {
            bail!("the child exited before `{when}`:\n{}", run.tail());
        }
        if shows_step(&std::fs::read_to_string(&log)?, when) {
            break;
        }
        if t0.elapsed() > FROZEN_BOUND {
            bail!(
                "no `{when}` in the child's log after {FROZEN_BOUND:?}:\n{}",
                run.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let record = ClusterRecord::load(&state_root.join(cluster))?
        .context("no cluster.json while the cluster comes up")?;
    let t_sig = Instant::now();
    run.signal(sig)?;
    let status = loop {
        if let Some(st) = run.exited()? {
            break st;
        }
        if t_sig.elapsed() > EXIT_BOUND {
            bail!(
                "the child still runs {EXIT_BOUND:?} after {sig:?}:\n{}",
                run.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!(
        "   figure: {cluster}: the child exited {} ms after {sig:?} at `{when}` ({status})",
        t_sig.elapsed().as_millis()
    );
    let log = std::fs::read_to_string(&run.log)?;
    run.child = None;
    Ok((status, log, record))
}

/// The last 40 lines of `log` (for error messages).
fn last_lines(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Nothing of `cluster` is left: none of its recorded processes or strays alive, no network
/// namespace, no state record.
fn ensure_gone(record: &ClusterRecord, state_root: &Path, cluster: &str, tail: &str) -> Result<()> {
    let alive: Vec<_> = record
        .processes
        .iter()
        .filter(|p| p.alive())
        .map(|p| &p.name)
        .collect();
    ensure!(
        alive.is_empty(),
        "processes of {cluster} still alive: {alive:?}"
    );
    let strays = xtask::cluster::teardown::stray_pids(record);
    ensure!(strays.is_empty(), "stray processes: {strays:?}");
    ensure!(
        !xtask::cluster::netns::exists(&record.netns),
        "network namespace {} still exists",
        record.netns
    );
    ensure!(
        ClusterRecord::load(&state_root.join(cluster))?.is_none(),
        "{cluster}'s cluster.json still there:\n{tail}"
    );
    Ok(())
}

/// The child `xtask lab run` and its log; killed (SIGKILL through its handle) and reaped if the
/// test fails before it exited, so no run is left behind; its clusters are then torn down by name.
struct Run {
    child: Option<Child>,
    log: PathBuf,
    state_root: PathBuf,
    clusters: Vec<&'static str>,
    /// Each cluster's record as last read while the child ran ([`Run::exited`] reads them
    /// again), so a cluster that came up or started processes after the signal is still known.
    records: std::collections::BTreeMap<&'static str, ClusterRecord>,
}

impl Run {
    fn new(child: Child, log: &Path, state_root: &Path, clusters: Vec<&'static str>) -> Run {
        Run {
            child: Some(child),
            log: log.to_path_buf(),
            state_root: state_root.to_path_buf(),
            clusters,
            records: std::collections::BTreeMap::new(),
        }
    }

    /// Reads each cluster's record again; one that is absent or half-written keeps the last read.
    fn watch_records(&mut self) {
        for &c in &self.clusters {
            if let Ok(Some(r)) = ClusterRecord::load(&self.state_root.join(c)) {
                self.records.insert(c, r);
            }
        }
    }

    /// Nothing is left of any of the run's clusters ([`ensure_gone`] for each cluster whose record
    /// was seen; for one never seen, no record and no network namespace of its name).
    fn ensure_all_gone(&self, tail: &str) -> Result<()> {
        for &c in &self.clusters {
            match self.records.get(c) {
                Some(record) => ensure_gone(record, &self.state_root, c, tail)?,
                None => {
                    ensure!(
                        ClusterRecord::load(&self.state_root.join(c))?.is_none(),
                        "{c}'s cluster.json is there but was never seen while the run ran"
                    );
                    ensure!(
                        !xtask::cluster::netns::exists(&format!("kca-{c}")),
                        "network namespace kca-{c} exists"
                    );
                }
            }
        }
        Ok(())
    }

    fn tail(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn exited(&mut self) -> Result<Option<std::process::ExitStatus>> {
        self.watch_records();
        match &mut self.child {
            Some(c) => Ok(c.try_wait()?),
            None => bail!("child already reaped"),
        }
    }

    /// SIGINT/SIGTERM through a pidfd; the child is not reaped yet, so its PID is still its own.
    fn signal(&self, sig: rustix::process::Signal) -> Result<()> {
        let c = self.child.as_ref().context("child already reaped")?;
        let p = ProcessRef::of(c.id() as i32).context("the child has no /proc entry")?;
        ensure!(p.signal(sig)?, "the child was already gone");
        Ok(())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take()
            && matches!(c.try_wait(), Ok(None))
        {
            eprintln!("   killing the unfinished child and tearing its cluster down");
            let _ = c.kill();
            let _ = c.wait();
            let _lock = xtask::lab_run::ClusterLock::acquire(&self.state_root);
            for c in &self.clusters {
                if let Err(e) = xtask::cluster::down_by_name(c, &self.state_root) {
                    eprintln!("   teardown of {c} failed: {e:#}");
                }
            }
        }
    }
}

/// The one attempt directory of act 5 (`freeze-05-…`) under the work dir, once it exists.
fn act5_attempt(workdir: &Path) -> Option<PathBuf> {
    let dir = workdir.join("faults");
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name();
        name.to_str()
            .is_some_and(|n| n.starts_with("freeze-05-"))
            .then(|| e.path())
    })
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn interrupt_test() -> Result<()> {
    xtask::cluster::host::require_root().context("this test runs a real cluster")?;
    let xtask_bin = xtask::lab_run::build_bin("xtask", "xtask")?;
    let run_id = format!(
        "interrupt-{}",
        chrono::Utc::now()
            .format("%Y%m%dT%H%M%S%.3fZ")
            .to_string()
            .replace('.', "")
    );
    let artifacts = xtask::lab_run::artifacts_dir(&run_id, lab::evidence::Lab::B);
    let run_dir = artifacts
        .parent()
        .context("artifacts parent")?
        .to_path_buf();
    std::fs::create_dir_all(&run_dir)?;
    let log = run_dir.join("xtask.log");
    let state_root = xtask::cluster::UpOptions::new("labb").state_root;
    let logfile = std::fs::File::create(&log)?;
    let child = Command::new(&xtask_bin)
        .args(["lab", "run", "--run-id", &run_id])
        .current_dir(xtask::cluster::config::repo_root())
        .stdin(Stdio::null())
        .stdout(logfile.try_clone()?)
        .stderr(logfile)
        .spawn()
        .with_context(|| format!("starting {}", xtask_bin.display()))?;
    let mut run = Run::new(child, &log, &state_root, vec!["laba", "labb", "labc"]);
    eprintln!("   lab run {run_id} started; log {}", log.display());

    // 1. Wait until act 5's freeze is live: its ledger says frozen and the target is in `T`.
    let workdir = artifacts.join("workdir");
    let t0 = Instant::now();
    let (attempt, report) = loop {
        if let Some(st) = run.exited()? {
            bail!(
                "the lab run exited ({st}) before act 5 froze Kyverno:\n{}",
                run.tail()
            );
        }
        if let Some(dir) = act5_attempt(&workdir)
            && let Ok(ledger) = read::<FreezeLedger>(&dir.join("ledger.json"))
            && ledger.status == "frozen"
            && let Ok(rep) = read::<HealerReport>(&dir.join("healer.json"))
            && rep.status == "frozen"
        {
            break (dir, rep);
        }
        if t0.elapsed() > FROZEN_BOUND {
            bail!(
                "act 5's freeze not live after {FROZEN_BOUND:?} (attempt dir {:?}):\n{}",
                act5_attempt(&workdir),
                run.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let target = report.target;
    let state = state_if_same(target.pid, target.start_time_ticks)?;
    ensure!(
        state == Some('T'),
        "Kyverno (pid {}) should be stopped now, state {state:?}",
        target.pid
    );
    // The cluster as recorded while it runs: every process it started.
    let record = ClusterRecord::load(&state_root.join("labb"))?
        .context("no cluster.json for labb while the lab runs")?;
    let recorded: Vec<_> = record
        .processes
        .iter()
        .filter(|p| p.alive())
        .cloned()
        .collect();
    ensure!(!recorded.is_empty(), "no live process in labb's record");

    // 2. SIGINT mid-freeze.
    let t_sig = Instant::now();
    run.signal(rustix::process::Signal::INT)?;
    let resumed_after = loop {
        match state_if_same(target.pid, target.start_time_ticks)? {
            Some('T') | Some('t') if t_sig.elapsed() < Duration::from_secs(35) => {}
            Some('T') | Some('t') => bail!("Kyverno still stopped 35 s after SIGINT"),
            _ => break t_sig.elapsed(),
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!(
        "   figure: Kyverno no longer stopped {} ms after SIGINT",
        resumed_after.as_millis()
    );

    // 3. A second signal during teardown.
    let t1 = Instant::now();
    loop {
        if run.exited()?.is_some() {
            bail!(
                "the lab run exited before its teardown was seen:\n{}",
                run.tail()
            );
        }
        let mut text = String::new();
        std::fs::File::open(&log)?.read_to_string(&mut text)?;
        if text.contains("tearing down cluster labb") {
            break;
        }
        if t1.elapsed() > TEARDOWN_BOUND {
            bail!(
                "no teardown {TEARDOWN_BOUND:?} after SIGINT:\n{}",
                run.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    run.signal(rustix::process::Signal::TERM)?;
    let status = loop {
        if let Some(st) = run.exited()? {
            break st;
        }
        if t_sig.elapsed() > EXIT_BOUND {
            bail!(
                "the lab run still runs {EXIT_BOUND:?} after SIGINT:\n{}",
                run.tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!(
        "   figure: lab run exited {} ms after SIGINT ({status})",
        t_sig.elapsed().as_millis()
    );
    let tail = run.tail();
    run.child = None;
    ensure!(
        status.code() == Some(130),
        "exit code 130 expected, got {status}:\n{tail}"
    );

    // 4. The healer resumed Kyverno and saw it no longer stopped.
    let healer: HealerReport = read(&attempt.join("healer.json"))?;
    ensure!(
        healer.status == "resumed",
        "healer.json status resumed expected, got {:?} (note {:?})",
        healer.status,
        healer.note
    );
    let check = healer
        .resume
        .as_ref()
        .context("healer.json has no resume check")?;
    ensure!(
        check.ended() && !check.gone,
        "the healer's resume check should see the process running, saw {check:?}"
    );
    let ledger: FreezeLedger = read(&attempt.join("ledger.json"))?;
    ensure!(
        ledger.status == "resumed" && ledger.resumed_at.is_some(),
        "ledger.json should record the resume: {ledger:?}"
    );
    ensure!(
        !matches!(ledger.state_after_resume, Some('T') | Some('t')),
        "the runner read the state after the resume as stopped: {ledger:?}"
    );

    // 5. Act 5's evidence: interrupted, naming the signal, with its raw data.
    let ev: Evidence = read(&workdir.join("evidence").join("05.json"))?;
    ensure!(
        ev.status == lab::evidence::ActStatus::Interrupted,
        "evidence/05.json status interrupted expected, got {:?}",
        ev.status
    );
    let why = ev.interruption.clone().unwrap_or_default();
    ensure!(
        why.contains("SIGINT"),
        "interruption should name SIGINT: {why:?}"
    );
    // The raw data so far, verbatim, including the attempt's plan, ledger and healer record
    // (`facts` are the observations made before the signal: none when it came at once).
    let kept: Vec<&str> = ev
        .raw
        .iter()
        .filter_map(|r| r.get("what").and_then(|w| w.as_str()))
        .collect();
    for what in ["fault-plan", "fault-ledger", "healer-report"] {
        ensure!(
            kept.contains(&what),
            "evidence/05.json's raw data lacks {what}: {kept:?}"
        );
    }
    ensure!(
        !workdir.join("evidence").join("06.json").exists(),
        "act 6 ran after the interrupt"
    );

    // 6. Artifacts.
    for f in [
        "evidence/05.json",
        "grades.json",
        "acts.json",
        "report.html",
        "report.ja.html",
    ] {
        ensure!(
            artifacts.join(f).is_file(),
            "artifact {f} missing in {}",
            artifacts.display()
        );
    }
    let name = attempt.file_name().context("attempt name")?;
    ensure!(
        artifacts
            .join("faults")
            .join(name)
            .join("healer.json")
            .is_file(),
        "fault ledgers not collected"
    );
    let logs = std::fs::read_dir(artifacts.join("logs"))
        .context("no logs/ in the artifacts")?
        .count();
    ensure!(logs > 0, "no component log collected");
    ensure!(run_dir.join("junit.xml").is_file(), "junit.xml missing");
    for lab in [lab::evidence::Lab::A, lab::evidence::Lab::C] {
        let other = xtask::lab_run::artifacts_dir(&run_id, lab);
        for f in ["report.html", "report.ja.html"] {
            ensure!(
                other.join(f).is_file(),
                "lab {}'s {f} missing in {}",
                lab.as_str(),
                other.display()
            );
        }
    }

    // 7. The cluster is gone.
    let alive: Vec<_> = recorded
        .iter()
        .filter(|p| p.alive())
        .map(|p| &p.name)
        .collect();
    ensure!(alive.is_empty(), "processes of labb still alive: {alive:?}");
    let strays = xtask::cluster::teardown::stray_pids(&record);
    ensure!(strays.is_empty(), "stray processes of labb: {strays:?}");
    ensure!(
        !xtask::cluster::netns::exists(&record.netns),
        "network namespace {} still exists",
        record.netns
    );
    ensure!(
        ClusterRecord::load(&state_root.join("labb"))?.is_none(),
        "labb's cluster.json still there"
    );
    ensure!(
        state_if_same(target.pid, target.start_time_ticks)?.is_none(),
        "the Kyverno process outlived the teardown"
    );
    ensure!(
        tail.contains("interrupted by SIGINT"),
        "the run should say it was interrupted:\n{tail}"
    );
    run.ensure_all_gone(&tail)
}
