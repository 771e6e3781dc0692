//! The machine lock: one cluster at a time on this machine, whichever checkout or engineer starts
//! it. `cargo xtask cluster up|down`, `lab run`, `guest run` and the cluster tests' fixture take
//! [`ClusterLock`] before they start or tear down anything; the lowest layer of xtask, so that any
//! layer may take it.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::status::Step;

/// The machine-wide cluster lock file: every checkout's `cluster up`/`down`, `lab run` and test
/// fixture takes it, so two checkouts never start or tear down clusters at the same time.
pub const MACHINE_LOCK: &str = "/run/kca-webhook-lab.lock";

/// Holds the cross-process cluster locks (flock): first the machine-wide [`MACHINE_LOCK`], then
/// `<state root>/.cluster.lock` (the one older checkouts take): one cluster at a time on this
/// machine. Taken by `cargo xtask cluster up|down`, `lab run` and the test fixture; never take it
/// twice in one process (a second flock on a new open file blocks).
#[derive(Debug)]
pub struct ClusterLock {
    _machine: std::fs::File,
    _file: std::fs::File,
}

fn flock_exclusive(path: &Path) -> Result<std::fs::File> {
    use rustix::fs::{FlockOperation, flock};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let step = Step::start(format!(
            "waiting for the cluster lock {} (another cluster runs)",
            path.display()
        ));
        // Polled rather than blocking, so a SIGINT/SIGTERM/SIGHUP (once `lab run` installed the
        // handler) ends the wait; no bound otherwise: another cluster may run for many minutes.
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("locking {}", path.display()));
                }
            }
            if let Some(signal) = lab::signals::pending() {
                bail!(
                    "interrupted by {signal} while waiting for the cluster lock {}",
                    path.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        step.ok();
    }
    Ok(file)
}

impl ClusterLock {
    /// Blocks until this process holds both locks, saying what it waits for.
    pub fn acquire(state_root: &Path) -> Result<ClusterLock> {
        let machine = flock_exclusive(Path::new(MACHINE_LOCK))?;
        std::fs::create_dir_all(state_root)
            .with_context(|| format!("creating {}", state_root.display()))?;
        let file = flock_exclusive(&state_root.join(".cluster.lock"))?;
        Ok(ClusterLock {
            _machine: machine,
            _file: file,
        })
    }
}
