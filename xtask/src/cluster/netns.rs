//! The node's network namespace: create, enter (per thread or per child), link to the host by a veth, delete.

use std::collections::BTreeSet;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use nix::sched::{CloneFlags, setns};

use super::config::{NODE_IFACE, NodeNet, Runtime, SERVICE_CIDR, VETH_SUPERNET};
use super::record::ClusterRecord;
use crate::command;
use xshell::cmd;

/// Inode of the network namespace bound at `/run/netns/<name>` (the nsfs inode: it identifies
/// the namespace, not the name), or None when there is none.
pub fn inode(name: &str) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(netns_path(name)).ok().map(|m| m.ino())
}

/// ifindex of host link `name` (`/sys/class/net/<name>/ifindex`), or None when there is none.
pub fn ifindex(name: &str) -> Option<u32> {
    std::fs::read_to_string(Path::new("/sys/class/net").join(name).join("ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/run/netns/<name>`: where `ip netns add` keeps the namespace bound.
pub fn netns_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

/// Whether network namespace `name` exists.
pub fn exists(name: &str) -> bool {
    netns_path(name).exists()
}

/// Runs `ip <args>` ([`crate::command::run`]), failing with its output.
pub fn ip(args: &[&str]) -> Result<()> {
    let sh = command::shell()?;
    command::run(cmd!(sh, "ip {args...}"))?;
    Ok(())
}

/// Runs `f` on a new thread that has joined only the network namespace `name` (setns(CLONE_NEWNET));
/// mounts, cgroups and the rest stay the host's.
pub fn in_netns<T: Send, F: FnOnce() -> Result<T> + Send>(name: &str, f: F) -> Result<T> {
    let path = netns_path(name);
    let ns = File::open(&path)
        .with_context(|| format!("opening network namespace {}", path.display()))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            setns(&ns, CloneFlags::CLONE_NEWNET)
                .with_context(|| format!("joining network namespace {}", path.display()))?;
            f()
        })
        .join()
        .map_err(|_| anyhow::anyhow!("thread in network namespace panicked"))?
    })
}

/// Indices of the 10.44.0.0/16 /30 blocks in use by any host address (another cluster's veth or anything else).
pub fn used_indices() -> Result<BTreeSet<u32>> {
    let sh = command::shell()?;
    let text = command::run(cmd!(sh, "ip -o -4 addr show"))?.stdout;
    let mut used = BTreeSet::new();
    for word in text.split_whitespace() {
        if let Some((addr, _)) = word.split_once('/')
            && let Ok(ip) = addr.parse::<Ipv4Addr>()
        {
            let (a, b) = (u32::from(ip), u32::from(VETH_SUPERNET));
            if a & 0xffff_0000 == b {
                used.insert((a - b) / 4);
            }
        }
    }
    Ok(used)
}

/// The first /30 not in `used` (addresses on the host or recorded by other clusters' state dirs).
pub fn pick_free(used: &BTreeSet<u32>) -> Result<NodeNet> {
    (0..NodeNet::COUNT)
        .find(|i| !used.contains(i))
        .map(|index| NodeNet { index })
        .context("no free /30 left in 10.44.0.0/16")
}

fn write_sysctl(key: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).with_context(|| format!("setting {key}={value}"))
}

/// Creates the namespace, the veth pair (host `kca-h<i>` with `.1/30`, node `eth0` with `.2/30`),
/// brings up loopback, routes the service CIDR to `eth0` (so the apiserver's packets to a ClusterIP
/// reach kube-proxy's DNAT; `docs/embedded-node.md`, pitfall 5) and sets the
/// namespace's forwarding and bridge-netfilter sysctls. The namespace's inode and the host veth's
/// ifindex go into `record` (saved) as soon as each exists: `down` deletes only those.
pub fn create(rt: &Runtime, record: &mut ClusterRecord) -> Result<()> {
    let (ns, net) = (rt.netns.as_str(), rt.net);
    let (host, tmp) = (net.host_veth(), net.node_veth_tmp());
    let host_addr = format!("{}/30", net.host_ip());
    let node_addr = format!("{}/30", net.node_ip());
    ip(&["netns", "add", ns])?;
    record.netns_inode = inode(ns);
    record.save()?;
    ip(&["link", "add", &host, "type", "veth", "peer", "name", &tmp])?;
    record.host_veth_ifindex = ifindex(&host);
    record.save()?;
    ip(&["link", "set", &tmp, "netns", ns])?;
    ip(&["addr", "add", &host_addr, "dev", &host])?;
    ip(&["link", "set", &host, "up"])?;
    ip(&["-n", ns, "link", "set", &tmp, "name", NODE_IFACE])?;
    ip(&["-n", ns, "addr", "add", &node_addr, "dev", NODE_IFACE])?;
    ip(&["-n", ns, "link", "set", NODE_IFACE, "up"])?;
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    ip(&["-n", ns, "route", "add", SERVICE_CIDR, "dev", NODE_IFACE])?;
    in_netns(ns, || {
        write_sysctl("net.ipv4.ip_forward", "1")?;
        // Per network namespace since Linux 5.3; missing when br_netfilter is not loaded.
        if Path::new("/proc/sys/net/bridge/bridge-nf-call-iptables").exists() {
            write_sysctl("net.bridge.bridge-nf-call-iptables", "1")?;
        }
        Ok(())
    })
}

/// Deletes the namespace (taking the veth pair, the bridge and every iptables rule inside with it)
/// and the host side of the veth if it somehow remains, each only when it is the one recorded
/// (`netns_inode`, `veth_ifindex`; a record without them owns neither). Returns what it removed
/// and what it left because it is not the recorded one.
pub fn delete(
    netns: &str,
    netns_inode: Option<u64>,
    host_veth: &str,
    veth_ifindex: Option<u32>,
) -> Result<Vec<String>> {
    let mut done = Vec::new();
    if let Some(found) = inode(netns) {
        if Some(found) == netns_inode {
            ip(&["netns", "delete", netns])?;
            done.push(format!("network namespace {netns}"));
        } else {
            bail!(
                "network namespace {netns} (inode {found}) is not the one this cluster made (recorded inode {netns_inode:?}): left alone"
            );
        }
    }
    // The host side of the veth goes away with its peer, asynchronously: wait a moment for it
    // (when it stays, it is deleted below).
    let _ = lab::wait::Wait::new(
        format!("veth {host_veth} to go with its peer"),
        std::time::Duration::from_secs(3),
        std::time::Duration::from_millis(100),
    )
    .blocking(
        || -> Result<lab::wait::Check<(), Option<u32>>, std::convert::Infallible> {
            let now = ifindex(host_veth);
            Ok(if now.is_none() || now != veth_ifindex {
                lab::wait::Check::Done(())
            } else {
                lab::wait::Check::NotYet(now)
            })
        },
        |_, _| {},
    );
    match ifindex(host_veth) {
        None => {}
        Some(i) if Some(i) == veth_ifindex => match ip(&["link", "delete", host_veth]) {
            Ok(()) => done.push(format!("veth {host_veth}")),
            Err(_) if ifindex(host_veth).is_none() => {}
            Err(e) => return Err(e),
        },
        Some(i) => done.push(format!(
            "left link {host_veth} alone: ifindex {i}, not the recorded {veth_ifindex:?}"
        )),
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_first_free() {
        let used = BTreeSet::from([0, 1, 3]);
        assert_eq!(pick_free(&used).unwrap().index, 2);
        assert_eq!(pick_free(&BTreeSet::new()).unwrap().index, 0);
    }
}
