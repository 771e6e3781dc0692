//! `up`'s preflight, the first step of `bring_up`, before anything is created or started: every
//! upstream program and CNI plugin the node runs is present, and the state dir's filesystem has
//! room for a run.
//!
//! Room: the node's kubelet evicts pods when its filesystems (kubelet's root dir and containerd's
//! root, both under the state dir) have less free space than its `evictionHard` thresholds
//! `nodefs.available` and `imagefs.available` (ours are set in [`kubelet::config`] and read from
//! there, not repeated: 1 %, where kubelet's own default would be 10 % and 15 %,
//! KubeletConfiguration v1beta1). A lab whose Kyverno pods are evicted mid-act fails for a
//! reason that is not the lab's, so `up` refuses below that threshold plus [`DISK_MARGIN_BYTES`].

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::config::Runtime;
use super::daemons::{self, kubelet};
use super::host::HostFacts;

/// The CNI plugins the node needs: its network config's chain (`bridge` with `host-local`
/// addresses, `portmap`; `daemons::containerd::cni_conflist`) and `loopback`, which containerd
/// runs for every pod.
pub const CNI_PLUGINS: &[&str] = &["bridge", "host-local", "loopback", "portmap"];

/// What one `up` and a lab run write under the state dir, with room to spare: 1 GiB. The images
/// imported into containerd are 182 MB of archives for the pinned pair (the `images-*` cache
/// entry; containerd keeps the content and an unpacked snapshot of each, about 0.4 GB), and the
/// component and audit logs of a lab are about 1 MB (`target/lab-artifacts/*/*/logs`); the rest
/// is left for the other work sharing the disk while the run lasts.
pub const DISK_MARGIN_BYTES: u64 = 1 << 30;

/// A filesystem's size and the space free to an unprivileged writer, in bytes (statvfs(3):
/// `f_blocks` and `f_bavail` times `f_frsize`, the capacity and available bytes kubelet's
/// eviction signals compare).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    /// Size of the filesystem.
    pub total: u64,
    /// Bytes free to an unprivileged writer.
    pub available: u64,
}

impl DiskSpace {
    /// The filesystem holding `path` (statvfs).
    pub fn of(path: &Path) -> Result<DiskSpace> {
        let s = rustix::fs::statvfs(path)
            .with_context(|| format!("reading the free space of {}", path.display()))?;
        Ok(DiskSpace {
            total: s.f_blocks.saturating_mul(s.f_frsize),
            available: s.f_bavail.saturating_mul(s.f_frsize),
        })
    }
}

/// Checks, before anything is created or started, that every program of the daemon registry and
/// every CNI plugin is present and that the state dir's filesystem has room ([`disk_refusal`]).
///
/// Errors: the first missing program (its path); a refusal naming the path, the free bytes and
/// the threshold.
pub fn check(rt: &Runtime, host: &HostFacts) -> Result<()> {
    for prog in daemons::programs() {
        let p = rt.bin(prog);
        if !p.is_file() {
            bail!("missing upstream program {}", p.display());
        }
    }
    for prog in CNI_PLUGINS {
        let p = rt.cni_bin_dir.join(prog);
        if !p.is_file() {
            bail!("missing CNI plugin {}", p.display());
        }
    }
    let threshold = eviction_percent(&kubelet::config(rt, host))?;
    let dir = &rt.state_dir;
    if let Some(why) = disk_refusal(dir, DiskSpace::of(dir)?, threshold, DISK_MARGIN_BYTES) {
        bail!("{why}");
    }
    Ok(())
}

/// The highest of the node's kubelet `evictionHard` percentages for the filesystems the state
/// dir holds (`nodefs.available`, `imagefs.available`) in `kubelet_config`.
///
/// Errors: a threshold absent or not written as a percentage (`"1%"`), naming it.
pub fn eviction_percent(kubelet_config: &serde_json::Value) -> Result<f64> {
    let mut highest = 0.0f64;
    for signal in ["nodefs.available", "imagefs.available"] {
        let found = &kubelet_config["evictionHard"][signal];
        let percent = found
            .as_str()
            .and_then(|s| s.strip_suffix('%'))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .with_context(|| {
                format!("the kubelet config's evictionHard.{signal}: expected a percentage such as \"1%\", found {found}")
            })?;
        highest = highest.max(percent);
    }
    Ok(highest)
}

/// Why `up` refuses to start on the filesystem of `path` with `space`, or None: it refuses when
/// the free bytes are below `threshold_percent` of its size plus `margin` bytes (pure).
pub fn disk_refusal(
    path: &Path,
    space: DiskSpace,
    threshold_percent: f64,
    margin: u64,
) -> Option<String> {
    let evicts_below = (space.total as f64 * threshold_percent / 100.0).ceil() as u64;
    let needed = evicts_below.saturating_add(margin);
    (space.available < needed).then(|| {
        format!(
            "the filesystem of {} has {} bytes free ({:.1} % of {} bytes); the node's kubelet \
             evicts pods below {threshold_percent} % free ({evicts_below} bytes, evictionHard \
             nodefs.available/imagefs.available), and `up` needs {needed} bytes free: that \
             threshold plus {margin} bytes for a run's images and logs. Nothing was started; \
             free space on that filesystem and run `up` again",
            path.display(),
            space.available,
            space.available as f64 * 100.0 / space.total.max(1) as f64,
            space.total,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn up_refuses_below_the_kubelet_threshold_plus_the_margin_and_names_the_numbers() {
        let disk = |available| DiskSpace {
            total: 252 * GIB,
            available,
        };
        let path = Path::new("/work/target/lab/kca");
        // 1 % of 252 GiB is 2.52 GiB; plus the 1 GiB margin: 3.52 GiB needed.
        let needed = (252.0 * GIB as f64 / 100.0).ceil() as u64 + GIB;
        assert_eq!(disk_refusal(path, disk(needed), 1.0, GIB), None);
        assert_eq!(disk_refusal(path, disk(57 * GIB), 1.0, GIB), None);
        let why = disk_refusal(path, disk(needed - 1), 1.0, GIB).expect("refused");
        for part in [
            "/work/target/lab/kca",
            &format!("{} bytes free", needed - 1),
            "below 1 % free",
            &format!("needs {needed} bytes free"),
        ] {
            assert!(why.contains(part), "{part:?} missing from: {why}");
        }
        // Below the threshold itself: refused, whatever the margin.
        assert!(disk_refusal(path, disk(GIB), 1.0, 0).is_some());
        // A higher threshold (kubelet's default 10 %) refuses what 1 % accepts.
        assert!(disk_refusal(path, disk(20 * GIB), 10.0, GIB).is_some());
        assert!(disk_refusal(path, disk(20 * GIB), 1.0, GIB).is_none());
    }

    #[test]
    fn the_threshold_is_read_from_the_node_kubelet_config() {
        let rt = daemons::test_runtime();
        let host = HostFacts {
            cap_sys_resource: true,
            cgroup_v1: false,
        };
        assert_eq!(eviction_percent(&kubelet::config(&rt, &host)).unwrap(), 1.0);
        let v = serde_json::json!({"evictionHard": {"nodefs.available": "10%", "imagefs.available": "15%"}});
        assert_eq!(eviction_percent(&v).unwrap(), 15.0);
        let e = eviction_percent(&serde_json::json!({"evictionHard": {"nodefs.available": "10Gi", "imagefs.available": "1%"}}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("evictionHard.nodefs.available") && e.contains("10Gi"),
            "{e}"
        );
    }
}
