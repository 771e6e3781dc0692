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

/// How long a command waits for the cluster lock before it gives up, naming the holder: longer
/// than the longest run that holds it (`cargo xtask matrix` over a six-cell grid, about 40 min
/// here; the whole `cargo test`, about 15 min).
pub const LOCK_WAIT_BOUND: std::time::Duration = std::time::Duration::from_secs(120 * 60);

/// How often a waiting command says it still waits when stderr is not a terminal (a terminal has
/// the step's own progress line).
const LOCK_WAIT_REPORT: std::time::Duration = std::time::Duration::from_secs(60);

/// The most of the lock file's holder line that is read: it is one line this module writes.
const HOLDER_MAX_BYTES: u64 = 1024;

/// The holder line written into a lock file once it is held: `pid <pid> since <RFC 3339 UTC>:
/// <command line>`, so that a command waiting for it can say who holds it.
fn holder_line() -> String {
    let args: Vec<String> = std::env::args().collect();
    format!(
        "pid {} since {}: {}",
        std::process::id(),
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        args.join(" ")
    )
}

/// Writes [`holder_line`] into the lock file this process now holds (best effort: a holder line
/// is information for waiters, never a condition).
fn write_holder(file: &std::fs::File) {
    use std::io::{Seek, Write};
    let mut f = file;
    let _ = f.set_len(0);
    let _ = f.rewind();
    let _ = writeln!(f, "{}", holder_line());
}

/// The holder line of a lock file (at most [`HOLDER_MAX_BYTES`], the first line), or `unknown`
/// when it has none (a holder from before holder lines were written).
fn read_holder(file: &std::fs::File) -> String {
    use std::io::{Read, Seek};
    let mut f = file;
    let mut text = String::new();
    if f.rewind().is_ok() {
        let _ = f.take(HOLDER_MAX_BYTES).read_to_string(&mut text);
    }
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        "unknown".to_owned()
    } else {
        line.to_owned()
    }
}

fn flock_exclusive(path: &Path) -> Result<std::fs::File> {
    use rustix::fs::{FlockOperation, flock};
    use std::io::IsTerminal;
    use std::os::unix::fs::OpenOptionsExt;
    // Never through a symlink: the state root's lock lies in a checkout another user may own,
    // and the holder line below writes into the file.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let step = Step::start(format!(
            "waiting ≤ {} min for the cluster lock {}",
            LOCK_WAIT_BOUND.as_secs() / 60,
            path.display()
        ));
        eprintln!("   held by {}", read_holder(&file));
        let started = std::time::Instant::now();
        let mut reported = started;
        let terminal = std::io::stderr().is_terminal();
        // Polled rather than blocking, so a SIGINT/SIGTERM/SIGHUP (once `lab run` installed the
        // handler) ends the wait.
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
            if started.elapsed() >= LOCK_WAIT_BOUND {
                bail!(
                    "waited {} min for the cluster lock {}; it is still held by {}: let that run \
                     end (or stop it) and start again",
                    LOCK_WAIT_BOUND.as_secs() / 60,
                    path.display(),
                    read_holder(&file)
                );
            }
            if !terminal && reported.elapsed() >= LOCK_WAIT_REPORT {
                reported = std::time::Instant::now();
                eprintln!(
                    "   still waiting for the cluster lock ({:.0} min of ≤ {} min; held by {})",
                    started.elapsed().as_secs_f64() / 60.0,
                    LOCK_WAIT_BOUND.as_secs() / 60,
                    read_holder(&file)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        step.ok();
    }
    if file.metadata().is_ok_and(|m| m.is_file()) {
        write_holder(&file);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiter_reads_the_holder_line_the_holder_wrote() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("lock");
        let held = flock_exclusive(&path).expect("a free lock is taken at once");
        let waiter = std::fs::File::open(&path).expect("open");
        let line = read_holder(&waiter);
        assert!(
            line.starts_with(&format!("pid {} since ", std::process::id())),
            "{line}"
        );
        drop(held);
    }

    #[test]
    fn a_symlinked_lock_file_is_refused_and_its_target_left_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").expect("write");
        let link = dir.path().join("lock");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(
            flock_exclusive(&link).is_err(),
            "a symlinked lock file was opened"
        );
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me");
    }

    #[test]
    fn a_lock_file_without_a_holder_line_says_unknown() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("lock");
        std::fs::write(&path, "").expect("write");
        let f = std::fs::File::open(&path).expect("open");
        assert_eq!(read_holder(&f), "unknown");
    }
}
