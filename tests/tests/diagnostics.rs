//! A forced `cluster up` failure leaves diagnostics that name the real cause (issue 14 item 3).
//!
//! `cluster up` with its Kyverno wait bounded at 3 s: the wait's error is returned with the
//! diagnostics directory, which holds the wait's last state and the daemons' log tails, and the
//! half-started cluster is torn down. A fresh `up` is what this is about, so it has its own
//! (half-started) cluster. The forced act failure (an act on a controller scaled to 0) is a row of
//! the audit lane of the `labs` binary: `labs/lab_a/forced_failure.rs`.

use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use lab::evidence::Lab;
use xtask::lab_run;

fn main() -> Result<()> {
    xtask::lab_run::ensure_lab_binary()?;
    cluster_up_fails_in_its_kyverno_wait()
}

/// `cluster up` whose Kyverno wait is bounded at 3 s (the admission controller cannot be Ready by
/// then): the error is the wait's, the diagnostics of the half-started cluster are saved (its API
/// objects and its daemons' log tails) and the cluster is torn down.
fn cluster_up_fails_in_its_kyverno_wait() -> Result<()> {
    let name = "test-diag-up";
    let mut opts = xtask::cluster::UpOptions::new(name);
    opts.kyverno_timeout = Duration::from_secs(3);
    let state_root = opts.state_root.clone();
    let _lock = lab_run::ClusterLock::acquire(&state_root)?;
    let diag = lab_run::artifacts_dir(&format!("test-diag-up-{}", lab_run::run_id()), Lab::A)
        .join("diagnostics");
    let err = match lab_run::diagnostics::up_with_diagnostics(opts, &diag) {
        Ok(c) => {
            c.down()?;
            bail!(
                "cluster up with a 3 s Kyverno bound succeeded: the forced failure did not happen"
            );
        }
        Err(e) => format!("{e:#}"),
    };
    eprintln!("cluster up failed as forced: {err}");
    ensure!(
        err.contains(&format!("diagnostics: {}", diag.display())),
        "the error names the diagnostics directory: {err}"
    );
    ensure!(
        xtask::cluster::Cluster::load(name, &state_root)?.is_none(),
        "the half-started cluster {name} was torn down"
    );
    let summary = lab::diagnostics::read_summary(&diag).context("summary.json of cluster up")?;
    eprintln!("summary: {summary:#?}");
    let wait = summary.wait.as_ref().context("the wait's last state")?;
    ensure!(
        summary.failed_step == "cluster up"
            && wait.what.contains("Kyverno's admission controller")
            && summary.telling[0].contains("last state"),
        "{summary:?}"
    );
    for f in [
        "events.txt",
        "kyverno-pods.json",
        "daemons/kube-apiserver.log",
        "daemons/kubelet.log",
    ] {
        ensure!(diag.join(f).is_file(), "{f} missing in {}", diag.display());
    }
    Ok(())
}
