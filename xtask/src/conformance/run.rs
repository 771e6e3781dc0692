//! `cargo xtask conformance`: the suite built ([`super::suite`]), a cluster (a fresh embedded node
//! without Kyverno, its images imported with the node's own, then torn down; or an existing
//! cluster through its kubeconfig, the images imported with the built `ctr` when its containerd
//! socket is given), `e2e.test` run against it ([`super::e2e_args`]), its output shown and kept
//! in `<report dir>/e2e.log`, then the verdict from its JUnit report ([`super::Verdict`]): every
//! skipped spec with its reason, every failure, and last the line `N passed, N failed, N skipped`
//! (also in `<report dir>/verdict.txt`). Exit status non-zero unless every selected spec that ran
//! passed and one did.
//!
//! Signals: the one handler of `lab::signals` is installed first, so a Ctrl-C reaches `e2e.test`
//! (which stops its spec and cleans up) and then this command, which tears the node down and
//! exits 130.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use super::suite::{self, Suite};
use super::{DEFAULT_FOCUS, SKIPS, Verdict};
use crate::cluster::kyverno::ImageInput;
use crate::cluster::{Cluster, Inputs, UpOptions};
use crate::flags::{ConformanceCluster, ConformanceCmd};
use crate::lock::ClusterLock;
use crate::status::Step;
use crate::upstream::Versions;

impl ConformanceCmd {
    /// Runs the command (see the module docs).
    pub fn run(self) -> Result<()> {
        lab::signals::install();
        let pinned = Versions::pinned();
        let kubernetes = self.kubernetes.clone().unwrap_or(pinned.kubernetes.clone());
        let versions = Versions::new(&kubernetes, &pinned.kyverno)?;
        let focus = self
            .focus
            .clone()
            .unwrap_or_else(|| DEFAULT_FOCUS.to_owned());
        let report_dir = match &self.report_dir {
            Some(d) => d.clone(),
            None => crate::upstream::workspace_root()
                .join("target/conformance")
                .join(crate::lab_run::run_id()),
        };
        std::fs::create_dir_all(&report_dir)
            .with_context(|| format!("creating {}", report_dir.display()))?;
        let report_dir = std::fs::canonicalize(&report_dir)?;
        eprintln!(
            " • suite: k8s.io/kubernetes {kubernetes} e2e.test; focus {focus:?}; cluster {:?}; report {}",
            self.cluster,
            report_dir.display()
        );
        for s in SKIPS {
            eprintln!("   skip {}: {}", s.pattern, s.reason);
        }
        let with_ctr = self.cluster == ConformanceCluster::Kubeconfig;
        let suite = suite::ensure_suite(&kubernetes, None, with_ctr)?;
        let verdict = match self.cluster {
            ConformanceCluster::Embedded => {
                self.on_embedded(&versions, &suite, &focus, &report_dir)
            }
            ConformanceCluster::Kubeconfig => self.on_kubeconfig(&suite, &focus, &report_dir),
        }?;
        if let Some(signal) = lab::signals::pending() {
            eprintln!("interrupted by {signal}; exit 130");
            std::process::exit(130);
        }
        finish(&verdict, &report_dir)
    }

    /// A fresh embedded node of `versions` without Kyverno, the suite's images imported with the
    /// node's own; the suite; the node's logs kept in the report dir; the node torn down (unless
    /// `--retain`).
    fn on_embedded(
        &self,
        versions: &Versions,
        suite: &Suite,
        focus: &str,
        report_dir: &Path,
    ) -> Result<Verdict> {
        if self.kubeconfig.is_some() || self.cri_endpoint.is_some() {
            bail!("--kubeconfig and --cri-endpoint apply only to --cluster kubeconfig");
        }
        let mut inputs = Inputs::resolve_versions(versions)?;
        // No Kyverno: neither its chart nor its images (the suite installs its own webhooks).
        inputs.chart_dir = None;
        inputs.images.retain(|i| {
            !i.reference
                .starts_with(crate::upstream::images::KYVERNO_REGISTRY)
        });
        inputs
            .images
            .extend(suite.images.iter().map(|i| ImageInput {
                reference: i.reference.clone(),
                path: i.path.clone(),
            }));
        let mut up = UpOptions::new(&self.name);
        up.inputs = Some(inputs);
        up.kyverno = false;
        up.versions = versions.clone();
        eprintln!(
            " • taking the machine's cluster lock {} (waits while another run holds it)",
            crate::lock::MACHINE_LOCK
        );
        let _lock = ClusterLock::acquire(&up.state_root)?;
        if let Some(signal) = lab::signals::pending() {
            bail!("interrupted by {signal} before the node was brought up");
        }
        let step = Step::start(format!(
            "bringing up a fresh node {} without Kyverno",
            self.name
        ));
        let cluster = Cluster::up(up)?;
        step.ok();
        let result = run_suite(suite, &cluster.kubeconfig(), focus, report_dir);
        let collected = crate::backend::collect_cluster_logs(cluster.state_dir(), report_dir);
        if self.retain {
            eprintln!(
                "node {} retained: kubeconfig {}",
                self.name,
                cluster.kubeconfig().display()
            );
        } else {
            let step = Step::start(format!("tearing down node {}", self.name));
            cluster.down()?;
            step.ok();
        }
        collected?;
        result
    }

    /// An existing cluster: the images imported into its node's containerd when a socket is
    /// given (or k3s's is present), then the suite.
    fn on_kubeconfig(&self, suite: &Suite, focus: &str, report_dir: &Path) -> Result<Verdict> {
        use crate::backend::kubeconfig::{K3S_CRI_ENDPOINT, K3S_KUBECONFIG};
        let kubeconfig = match &self.kubeconfig {
            Some(p) => p.clone(),
            None if Path::new(K3S_KUBECONFIG).exists() => PathBuf::from(K3S_KUBECONFIG),
            None => bail!("--cluster kubeconfig needs --kubeconfig ({K3S_KUBECONFIG} is absent)"),
        };
        let socket = match &self.cri_endpoint {
            Some(p) => Some(p.clone()),
            None if Path::new(K3S_CRI_ENDPOINT).exists() => Some(PathBuf::from(K3S_CRI_ENDPOINT)),
            None => None,
        };
        match (socket, &suite.ctr) {
            (Some(socket), Some(ctr)) => {
                let socket = PathBuf::from(
                    socket
                        .to_string_lossy()
                        .trim_start_matches("unix://")
                        .to_owned(),
                );
                suite::import_images(ctr, &socket, &suite.images)?;
            }
            _ => eprintln!(
                " • no containerd socket given: the node must already hold {}",
                suite
                    .images
                    .iter()
                    .map(|i| i.reference.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
        run_suite(suite, &kubeconfig, focus, report_dir)
    }
}

/// Runs `e2e.test` against `kubeconfig`, its output shown and written to `<report_dir>/e2e.log`,
/// and reads its JUnit report. `e2e.test`'s own exit status is reported, but the verdict comes
/// from the report (a failed spec makes both fail).
///
/// # Errors
/// `e2e.test` cannot be started, or it wrote no readable JUnit report (its exit status and log
/// named).
fn run_suite(suite: &Suite, kubeconfig: &Path, focus: &str, report_dir: &Path) -> Result<Verdict> {
    let args = super::e2e_args(kubeconfig, &suite.kubectl, report_dir, focus);
    let log_path = report_dir.join("e2e.log");
    let mut cmd = Command::new(&suite.e2e_test);
    cmd.args(&args).current_dir(report_dir);
    eprintln!(
        " • running {} (its log, with klog's stderr: {})",
        crate::command::pretty(&cmd),
        log_path.display()
    );
    let started = std::time::Instant::now();
    let status = crate::command::run_logged(cmd, &log_path)?;
    eprintln!(
        " • e2e.test exited ({status}) after {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let junit = report_dir.join("junit_01.xml");
    let xml = std::fs::read_to_string(&junit).with_context(|| {
        format!(
            "e2e.test ({status}) wrote no JUnit report {}; see {}",
            junit.display(),
            log_path.display()
        )
    })?;
    Verdict::from_junit(&xml, focus).with_context(|| format!("reading {}", junit.display()))
}

/// Prints the skips with their reasons, the failures, writes `verdict.txt`, and prints the
/// verdict line last; an error unless [`Verdict::ok`].
fn finish(v: &Verdict, report_dir: &Path) -> Result<()> {
    for s in &v.skips {
        eprintln!("skipped: {} — {}", s.name, s.reason);
    }
    for f in &v.failures {
        eprintln!("FAILED: {f}");
    }
    let path = report_dir.join("verdict.txt");
    std::fs::write(&path, format!("{}\n", v.line()))
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("JUnit: {}", report_dir.join("junit_01.xml").display());
    println!("{}", v.line());
    if !v.ok() {
        bail!("conformance: {}", v.line());
    }
    Ok(())
}
