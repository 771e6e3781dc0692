//! Failure diagnostics of `cargo xtask lab run` and the test fixtures: when an act (through
//! [`super::LabRun::act`]), a bounded wait or `cluster up` fails, [`lab::diagnostics::collect`]
//! saves what the cluster looked like into `target/lab-artifacts/<run-id>/<lab>/diagnostics/`
//! (on the embedded backend with the tails of the daemons' logs of the state dir), and the three
//! most telling lines and the directory are printed. The original error is always returned; a
//! collection step that fails is only a line in `summary.json`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cluster::{Cluster, UpOptions};

/// Where a lab's diagnostics go: `<artifacts>/diagnostics/`.
pub fn dir(artifacts: &Path) -> PathBuf {
    artifacts.join("diagnostics")
}

/// Prints the three lines and the directory of a collection (stderr).
pub fn print(summary: &lab::diagnostics::Summary, dir: &Path) {
    crate::status_line!("   diagnostics of {}:", summary.failed_step);
    for l in &summary.telling {
        crate::status_line!("     {l}");
    }
    if !summary.collector_failures.is_empty() {
        crate::status_line!(
            "     ({} collection steps failed; see summary.txt)",
            summary.collector_failures.len()
        );
    }
    crate::status_line!("   the rest: {}", dir.display());
}

/// Collects the diagnostics of a failed step (error `err`, an `anyhow` chain whose
/// [`lab::error::LabError::WaitTimedOut`], if any, gives the wait's last state) into `dir` and
/// prints them. `daemon_logs`: an embedded cluster's `<state dir>/logs`.
pub fn collect_for(
    failed_step: &str,
    err: &anyhow::Error,
    kubeconfig: Option<&Path>,
    daemon_logs: Option<PathBuf>,
    dir: &Path,
) -> lab::diagnostics::Summary {
    let req = lab::diagnostics::Request {
        dir: dir.to_path_buf(),
        failed_step: failed_step.to_owned(),
        error: format!("{err:#}"),
        wait: lab::diagnostics::wait_state_in(err.chain()),
        namespaces: lab::diagnostics::lab_namespaces(),
        daemon_logs,
    };
    let summary = match crate::cluster::ready::block_on(lab::diagnostics::collect(kubeconfig, &req))
    {
        Ok(s) => s,
        Err(e) => lab::diagnostics::Summary {
            failed_step: failed_step.to_owned(),
            error: format!("{err:#}"),
            collector_failures: vec![format!("running the collector: {e:#}")],
            ..Default::default()
        },
    };
    print(&summary, dir);
    summary
}

/// [`Cluster::up`], and when it fails: the diagnostics of the half-started cluster into `diag_dir`
/// (its API objects if the API server answers, and its daemons' log tails), then its teardown
/// (unless `opts.retain_on_failure` was asked by the caller). Returns `up`'s own error, with the
/// diagnostics directory added to it.
pub fn up_with_diagnostics(opts: UpOptions, diag_dir: &Path) -> Result<Cluster> {
    let retain = opts.retain_on_failure;
    let (name, state_root) = (opts.name.clone(), opts.state_root.clone());
    // The record of a cluster of that name before `up` (another process's running cluster, which
    // `up` refuses): not this `up`'s, so never torn down below (rule: delete only what we made).
    let before = Cluster::load(&name, &state_root)
        .ok()
        .flatten()
        .map(|c| c.record().created_at.clone());
    let err = match Cluster::up(UpOptions {
        retain_on_failure: true,
        ..opts
    }) {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    let cluster = Cluster::load(&name, &state_root).ok().flatten();
    let (kubeconfig, logs) = match &cluster {
        Some(c) => (Some(c.kubeconfig()), Some(c.state_dir().join("logs"))),
        None => (None, Some(state_root.join(&name).join("logs"))),
    };
    match kubeconfig {
        Some(kc) => {
            collect_for("cluster up", &err, Some(&kc), logs, diag_dir);
        }
        None => {
            // No record: nothing reachable; the daemons' logs are still tailed.
            let req = lab::diagnostics::Request {
                dir: diag_dir.to_path_buf(),
                failed_step: "cluster up".into(),
                error: format!("{err:#}"),
                wait: lab::diagnostics::wait_state_in(err.chain()),
                namespaces: lab::diagnostics::lab_namespaces(),
                daemon_logs: logs,
            };
            let missing = diag_dir.join("no-kubeconfig");
            if let Ok(s) =
                crate::cluster::ready::block_on(lab::diagnostics::collect(Some(&missing), &req))
            {
                print(&s, diag_dir);
            }
        }
    }
    let started_by_this_up = |c: &Cluster| before.as_ref() != Some(&c.record().created_at);
    if !retain && let Some(c) = cluster.filter(started_by_this_up) {
        crate::status_line!("   tearing down the half-started cluster {name}");
        if let Err(e) = c.down() {
            crate::status_line!("   teardown of {name} failed: {e:#}");
        }
    }
    Err(err).with_context(|| format!("diagnostics: {}", diag_dir.display()))
}
