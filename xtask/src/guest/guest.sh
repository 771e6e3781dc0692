#!/bin/bash
# The runner inside the cgroup v2 guest (`cargo xtask guest`, xtask/src/guest/mod.rs): started
# once by kca-guest.service at boot, it takes a host snapshot, runs each line of
# /root/kca-guest/steps (xtask commands), takes the snapshot again, copies the artifacts to
# /root/kca-guest/out (which the host reads back from the disk image) and powers the guest off.
# Everything it prints goes to the serial console, which the host shows as progress.
set -u
G=/root/kca-guest
OUT=$G/out
mkdir -p "$OUT"
exec > >(tee -a "$OUT/console.log" > /dev/ttyS0) 2>&1
. "$G/env.sh"
log() { echo "[kca-guest] $(date -u +%H:%M:%S) $*"; }

# What the host tests compare before `up` and after `down` (tests/src/host.rs), plus the cgroup
# layout two levels deep, the root's and system.slice's subtree_control and kca units.
snapshot() {
    echo "## netns"; ip netns list | sort
    echo "## links"; ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort
    echo "## host iptables"
    for b in iptables-nft-save iptables-legacy-save; do
        $b 2>/dev/null | grep -v '^[#*]' | grep -v '^COMMIT' | sed 's/ \[[0-9:]*\]$//' | sed "s/^/$b: /"
    done | sort
    echo "## paths"
    for p in $WATCHED_PATHS; do [ -e "$p" ] && echo "$p"; done
    echo "## files"
    find /var/lib/kubelet /etc/cni /opt/cni /run/containerd -xdev -maxdepth 6 -printf '%p %m\n' 2>/dev/null | sort
    echo "## mounts"; awk '{print $5}' /proc/self/mountinfo | sort
    echo "## cgroups (depth <= 2)"; find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d | sort
    echo "## cgroup.subtree_control"
    for d in /sys/fs/cgroup /sys/fs/cgroup/system.slice; do echo "$d: $(cat $d/cgroup.subtree_control)"; done
    echo "## run dir entries"
    ls -d /run/containerd/* /run/containerd/s/* /run/containerd/runc/* /run/netns/* /var/lib/cni/* /var/log/containers/* 2>/dev/null | sort
    echo "## sysctls"
    for k in $WATCHED_SYSCTLS; do v=$(sysctl -n "$k" 2>/dev/null) && echo "$k = $v"; done
    echo "## kca systemd units"; systemctl list-units --all --plain --no-legend 'kca*' | awk '{print $1, $3, $4}'
    echo "## node processes"
    ps -eo comm= | grep -E '^(kube|kine|containerd|runc|kyverno|pause|helm|crictl|sleep)' | sort | uniq -c
}

log "booted: kernel $(uname -r), $(stat -fc %T /sys/fs/cgroup), root cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers), subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control), systemd $(systemctl --version | head -1 | cut -d' ' -f2), $(nproc) CPUs, $(free -m | awk '/Mem:/ {print $2}') MiB"
# Boot jobs still running (e2scrub_reap, …) would show in the snapshots: wait (≤ 120 s) until no
# job but this runner's own is running (the rest wait for it: multi-user.target, utmp's runlevel).
for i in $(seq 120); do
    systemctl list-jobs --no-legend | awk '$4 == "running"' | grep -v kca-guest | grep -q . || break
    sleep 1
done
log "boot settled ($(systemctl list-jobs --no-legend | wc -l) jobs left)"
snapshot > "$OUT/snapshot-before.txt"
cd "$REPO"
n=0
: > "$OUT/steps.tsv"
while IFS= read -r step; do
    [ -z "$step" ] && continue
    n=$((n + 1))
    log "step $n: $step"
    t0=$(date +%s)
    bash -c "$step" > >(tee "$OUT/step-$n.log") 2>&1
    rc=$?
    sleep 1
    secs=$(( $(date +%s) - t0 ))
    log "step $n: rc=$rc in ${secs}s"
    printf '%s\t%s\t%s\t%s\n' "$n" "$rc" "$secs" "$step" >> "$OUT/steps.tsv"
    snapshot > "$OUT/snapshot-after-step-$n.txt"
    log "step $n: snapshot difference from before the first step:"
    diff "$OUT/snapshot-before.txt" "$OUT/snapshot-after-step-$n.txt" | head -60
done < "$G/steps"
snapshot > "$OUT/snapshot-after.txt"
diff "$OUT/snapshot-before.txt" "$OUT/snapshot-after.txt" > "$OUT/snapshot.diff"
log "snapshot difference (before the first step, after the last):"
cat "$OUT/snapshot.diff"
[ -d target/lab-artifacts ] && cp -a target/lab-artifacts "$OUT/lab-artifacts"
for d in target/lab/*/logs; do
    [ -d "$d" ] && mkdir -p "$OUT/cluster-logs/$(basename "$(dirname "$d")")" && cp -a "$d/." "$OUT/cluster-logs/$(basename "$(dirname "$d")")/"
done
journalctl -b --no-pager > "$OUT/journal.txt" 2>&1
log "done"
echo done > "$OUT/finished"
sync
systemctl poweroff
