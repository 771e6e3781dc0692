//! Facts about the host the node runs on, read at `up`: capabilities, cgroup layout, root.

use anyhow::{Context, Result, bail};

/// Host facts that change the node's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostFacts {
    /// Whether this process has CAP_SYS_RESOURCE (effective set); without it runc cannot raise
    /// oom_score_adj and containerd must restrict it.
    pub cap_sys_resource: bool,
    /// Whether `/sys/fs/cgroup` is a cgroup v1 (or hybrid) layout rather than the unified v2 hierarchy.
    pub cgroup_v1: bool,
}

/// CAP_SYS_RESOURCE's bit number (linux/capability.h).
const CAP_SYS_RESOURCE: u32 = 24;

impl HostFacts {
    /// Reads `/proc/self/status` (CapEff) and `/sys/fs/cgroup`.
    pub fn detect() -> Result<HostFacts> {
        let status =
            std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
        let cap_eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .context("no CapEff line in /proc/self/status")?;
        let cap_eff = u64::from_str_radix(cap_eff.trim(), 16)
            .context("parsing CapEff in /proc/self/status")?;
        let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
        Ok(HostFacts {
            cap_sys_resource: cap_eff & (1 << CAP_SYS_RESOURCE) != 0,
            cgroup_v1: !unified,
        })
    }
}

/// Fails with a clear message unless this is Linux and the effective user is root.
pub fn require_root() -> Result<()> {
    if !cfg!(target_os = "linux") {
        bail!(
            "the embedded cluster needs Linux (network namespaces, cgroups, containerd); this is {}",
            std::env::consts::OS
        );
    }
    if !rustix::process::geteuid().is_root() {
        bail!(
            "the embedded cluster needs root (network namespaces, mounts, cgroups); run as root, e.g. `sudo -E cargo xtask cluster up`"
        );
    }
    Ok(())
}

/// Mount points of cgroup hierarchies: every cgroup v1 controller mount and the unified (v2) mount,
/// from `/proc/self/mountinfo`.
pub fn cgroup_mounts() -> Result<Vec<std::path::PathBuf>> {
    let info =
        std::fs::read_to_string("/proc/self/mountinfo").context("reading /proc/self/mountinfo")?;
    let mut out = Vec::new();
    for line in info.lines() {
        // `… mount_point … - fstype source options`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fstype = right.split_whitespace().next().unwrap_or("");
        if (fstype == "cgroup" || fstype == "cgroup2")
            && let Some(mp) = left.split_whitespace().nth(4)
        {
            out.push(std::path::PathBuf::from(mp));
        }
    }
    Ok(out)
}

/// The cluster's cgroup parent (`cgroup_root`) in every hierarchy where it does not exist yet:
/// what [`prepare_cgroups`] will create, recorded first so `down` removes only these.
pub fn missing_cgroups(cgroup_root: &str) -> Result<Vec<std::path::PathBuf>> {
    let rel = cgroup_root.trim_start_matches('/');
    Ok(cgroup_mounts()?
        .into_iter()
        .map(|m| m.join(rel))
        .filter(|d| !d.exists())
        .collect())
}

/// Creates the cluster's cgroup parent (`cgroup_root`, e.g. `/kca-<name>`) in every cgroup
/// hierarchy, so kubelet's `cgroupRoot` exists everywhere it checks. In the v1 cpuset controller a
/// new cgroup starts with empty `cpuset.cpus`/`cpuset.mems`; copy the parent's.
pub fn prepare_cgroups(cgroup_root: &str) -> Result<()> {
    let rel = cgroup_root.trim_start_matches('/');
    for mount in cgroup_mounts()? {
        let dir = mount.join(rel);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating cgroup {}", dir.display()))?;
        for f in ["cpuset.cpus", "cpuset.mems"] {
            let parent = mount.join(f);
            if parent.exists() {
                let v = std::fs::read_to_string(&parent)
                    .with_context(|| format!("reading {}", parent.display()))?;
                std::fs::write(dir.join(f), v.trim())
                    .with_context(|| format!("writing {}", dir.join(f).display()))?;
            }
        }
    }
    Ok(())
}
