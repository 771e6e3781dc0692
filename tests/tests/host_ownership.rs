//! The embedded node touches only what it made (issue 13), checked without starting a cluster:
//!
//! - `up` refuses a `<state root>/<name>` directory that holds no record or ownership marker of
//!   that cluster, and deletes nothing in it; `backends` (the other backends' state) is reserved;
//! - a `cluster.json` copied from another checkout is refused by `down` and `up`, and the process
//!   it names is not signalled; a record from another boot signals nothing;
//! - removing a state dir never crosses a mount point: with a host directory bind-mounted inside,
//!   removal stops, names the mount, and the host files survive;
//! - `down` of a cluster without a record leaves a network namespace of that name alone.
//!
//! Needs Linux and root (mounts, network namespaces); fails (never skips) otherwise. Each test
//! works in its own temporary state root; nothing else of the host is touched. Each test holds
//! the machine lock ([`ClusterLock`]) while it runs: `up` refuses to start beside a kubelet or
//! containerd that no record under its state root owns, so a cluster that another checkout or a
//! cluster test brought up would otherwise turn these checks into that refusal.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, ensure};
use serde_json::json;
use xtask::cluster::record::RUN_NETNS;
use xtask::cluster::{Cluster, Inputs, UpOptions, down_by_name};
use xtask::lock::ClusterLock;

/// Root, and the host to this test alone: the machine lock, held until the returned value drops
/// (tests in this binary run one at a time; a cluster elsewhere is waited for). The lock's state
/// root is a temporary directory, removed with it.
fn exclusive_host() -> Result<(ClusterLock, tempfile::TempDir)> {
    xtask::cluster::host::require_root().context("these tests mount and create namespaces")?;
    let root = tempfile::tempdir()?;
    Ok((ClusterLock::acquire(root.path())?, root))
}

/// Options whose programs do not exist: `up` fails at the first program check, after the
/// ownership checks this file is about.
fn opts(name: &str, root: &Path) -> UpOptions {
    let mut o = UpOptions::new(name);
    o.state_root = root.to_path_buf();
    o.inputs = Some(Inputs {
        bin_dir: PathBuf::from("/nonexistent/kca-bin"),
        cni_bin_dir: PathBuf::from("/nonexistent/kca-bin"),
        images: vec![],
        chart_dir: None,
    });
    o.kyverno = false;
    o
}

/// A `sleep` child that stands in for a recorded daemon; `down` must not signal it.
fn sleeper() -> Result<(Child, serde_json::Value)> {
    let child = Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .context("starting sleep")?;
    let pid = child.id() as i32;
    let (_, start_time_ticks) =
        xtask::cluster::process::proc_stat(pid).context("reading the sleeper's start time")?;
    let rec = json!({"name": "kine", "pid": pid, "start_time": start_time_ticks, "log": "", "argv": ["sleep"]});
    Ok((child, rec))
}

/// Whether the sleeper still runs: same PID and start time, not a zombie (`down` may have reaped
/// it, since it is this process's child, so `Child::try_wait` cannot tell).
fn alive(child: &mut Child, start_time_ticks: u64) -> bool {
    matches!(
        xtask::cluster::process::proc_stat(child.id() as i32),
        Some((state, st)) if st == start_time_ticks && state != 'Z'
    )
}

/// A record as `up` writes it, naming `state_dir`, boot `boot_id`, and the given processes.
fn record_json(
    name: &str,
    state_dir: &Path,
    boot_id: &str,
    procs: Vec<serde_json::Value>,
) -> String {
    json!({
        "schema_version": 1,
        "name": name,
        "state_dir": state_dir,
        "netns": format!("kca-{name}"),
        "node_name": format!("kca-{name}"),
        "node_uid": null,
        "net": {"index": 16000},
        "cgroup_root": format!("/kca-{name}"),
        "bin_dir": "/nonexistent/kca-bin",
        "cni_bin_dir": "/nonexistent/kca-bin",
        "processes": procs,
        "created_at": "2026-11-30T00:00:00.000Z",
        "timings_ms": {},
        "boot_id": boot_id,
    })
    .to_string()
}

#[test]
fn up_refuses_a_directory_it_did_not_make() -> Result<()> {
    let _host = exclusive_host()?;
    let root = tempfile::tempdir()?;
    let dir = root.path().join("data");
    std::fs::create_dir_all(dir.join("sub"))?;
    std::fs::write(dir.join("keep"), "mine")?;
    std::fs::write(dir.join("sub/also"), "mine too")?;
    let e = format!("{:#}", Cluster::up(opts("data", root.path())).unwrap_err());
    ensure!(
        e.contains("is not the state directory of cluster data") && e.contains("left untouched"),
        "unexpected error: {e}"
    );
    ensure!(
        std::fs::read_to_string(dir.join("keep"))? == "mine",
        "keep changed"
    );
    ensure!(
        std::fs::read_to_string(dir.join("sub/also"))? == "mine too",
        "sub/also changed"
    );
    Ok(())
}

#[test]
fn up_clears_its_own_old_state_dir() -> Result<()> {
    // The counterpart of the refusal: a directory with our marker (what `down` leaves: logs and
    // the marker) is cleared and reused, so the refusal is not a refusal of everything.
    let _host = exclusive_host()?;
    let root = tempfile::tempdir()?;
    let canon = std::fs::canonicalize(root.path())?;
    let dir = canon.join("own");
    std::fs::create_dir_all(dir.join("logs"))?;
    std::fs::write(dir.join("logs/kine.log"), "old")?;
    std::fs::write(
        dir.join(xtask::cluster::record::OWNER_FILE),
        json!({"name": "own", "state_dir": dir, "created_at": "2026-11-30T00:00:00.000Z"})
            .to_string(),
    )?;
    let e = format!("{:#}", Cluster::up(opts("own", root.path())).unwrap_err());
    ensure!(
        e.contains("missing upstream program"),
        "unexpected error: {e}"
    );
    ensure!(
        !dir.join("logs/kine.log").exists(),
        "the old log of our own dir was kept"
    );
    Ok(())
}

#[test]
fn backends_is_a_reserved_name() -> Result<()> {
    let _host = exclusive_host()?;
    let root = tempfile::tempdir()?;
    let f = root.path().join("backends/test-x/k3s.log");
    std::fs::create_dir_all(f.parent().unwrap())?;
    std::fs::write(&f, "k3s")?;
    let e = format!(
        "{:#}",
        Cluster::up(opts("backends", root.path())).unwrap_err()
    );
    ensure!(e.contains("reserved"), "unexpected error: {e}");
    ensure!(
        std::fs::read_to_string(&f)? == "k3s",
        "{} changed",
        f.display()
    );
    Ok(())
}

#[test]
fn a_copied_record_is_refused_and_signals_nothing() -> Result<()> {
    let _host = exclusive_host()?;
    let original = tempfile::tempdir()?;
    let copy = tempfile::tempdir()?;
    let (mut child, proc) = sleeper()?;
    let proc_copy = proc.clone();
    let orig_dir = std::fs::canonicalize(original.path())?.join("kca");
    let copy_dir = copy.path().join("kca");
    std::fs::create_dir_all(&copy_dir)?;
    let boot = xtask::cluster::record::boot_id()?;
    std::fs::write(
        copy_dir.join("cluster.json"),
        record_json("kca", &orig_dir, &boot, vec![proc]),
    )?;
    let down = down_by_name("kca", copy.path());
    let up = Cluster::up(opts("kca", copy.path()));
    let still = alive(&mut child, proc_copy["start_time"].as_u64().unwrap_or(0));
    let _ = child.kill();
    let _ = child.wait();
    ensure!(still, "the process named by a copied record was signalled");
    let e = format!("{:#}", down.err().context("down accepted a copied record")?);
    ensure!(
        e.contains("copied from elsewhere"),
        "unexpected down error: {e}"
    );
    let e = format!("{:#}", up.err().context("up accepted a copied record")?);
    ensure!(
        e.contains("copied from elsewhere"),
        "unexpected up error: {e}"
    );
    ensure!(
        copy_dir.join("cluster.json").exists(),
        "the copied record was removed"
    );
    Ok(())
}

#[test]
fn a_record_from_another_boot_signals_nothing() -> Result<()> {
    let _host = exclusive_host()?;
    let root = tempfile::tempdir()?;
    let (mut child, proc) = sleeper()?;
    let proc_copy = proc.clone();
    let dir = std::fs::canonicalize(root.path())?.join("old");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("cluster.json"),
        record_json(
            "old",
            &dir,
            "00000000-0000-0000-0000-000000000000",
            vec![proc],
        ),
    )?;
    let down = down_by_name("old", root.path());
    let still = alive(&mut child, proc_copy["start_time"].as_u64().unwrap_or(0));
    let _ = child.kill();
    let _ = child.wait();
    ensure!(still, "down signalled a PID recorded in another boot");
    let report = down?.context("down found no record")?;
    ensure!(
        report.done.iter().any(|l| l.contains("from another boot")),
        "down did not say the record is from another boot: {:?}",
        report.done
    );
    Ok(())
}

/// Unmounts (by path, every layer) the bind mounts this test made, also when it fails.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        while !xtask::cluster::teardown::mounts_under(&self.0).is_empty() {
            if nix::mount::umount2(&self.0, nix::mount::MntFlags::empty()).is_err() {
                break;
            }
        }
    }
}

#[test]
fn removal_never_crosses_a_mount_point() -> Result<()> {
    let _host = exclusive_host()?;
    let scratch = tempfile::tempdir()?;
    std::fs::write(scratch.path().join("f"), "host data")?;
    let root = tempfile::tempdir()?;
    let dir = std::fs::canonicalize(root.path())?.join("victim");
    let stack = dir.join("kubelet/stack");
    std::fs::create_dir_all(&stack)?;
    std::fs::write(dir.join("other"), "x")?;
    let _guard = Unmount(stack.clone());
    // Stacked several times, as a leftover volume-subpath bind might be.
    for _ in 0..6 {
        nix::mount::mount(
            Some(scratch.path()),
            &stack,
            None::<&str>,
            nix::mount::MsFlags::MS_BIND,
            None::<&str>,
        )
        .with_context(|| format!("bind-mounting at {}", stack.display()))?;
    }
    let r = xtask::cluster::teardown::remove_contents(&dir, &[]);
    ensure!(
        std::fs::read_to_string(scratch.path().join("f"))? == "host data",
        "the host file behind the bind mount was removed"
    );
    let e = format!(
        "{:#}",
        r.err().context("removal went ahead with a mount inside")?
    );
    ensure!(
        e.contains("still mounted") && e.contains(&stack.display().to_string()),
        "unexpected error: {e}"
    );
    ensure!(
        dir.join("other").exists(),
        "removal started although it refused"
    );
    Ok(())
}

#[test]
fn down_without_a_record_leaves_a_namespace_of_that_name_alone() -> Result<()> {
    let _host = exclusive_host()?;
    let root = tempfile::tempdir()?;
    let name = format!("own{}", std::process::id() % 100_000);
    let ns = xtask::cluster::config::netns_name(&name);
    // `ip netns add` makes /run/netns (a self bind mount) the first time: put back as found.
    let run_netns_was_there = Path::new(RUN_NETNS).exists();
    xtask::cluster::netns::ip(&["netns", "add", &ns])?;
    let r = down_by_name(&name, root.path());
    let exists = xtask::cluster::netns::exists(&ns);
    xtask::cluster::netns::ip(&["netns", "delete", &ns])?;
    if !run_netns_was_there {
        xtask::cluster::teardown::put_back_run_netns()?;
    }
    let run_netns_left = !run_netns_was_there && Path::new(RUN_NETNS).exists();
    ensure!(
        !run_netns_left,
        "the test left {RUN_NETNS}, absent before it"
    );
    ensure!(r?.is_none(), "down found a record in an empty state root");
    ensure!(
        exists,
        "down deleted network namespace {ns}, which no record claims"
    );
    Ok(())
}
