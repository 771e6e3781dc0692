//! `down`: stop everything the cluster started and remove what it left on the host; idempotent,
//! keeps going after errors and reports them all.
//!
//! Order (`docs/embedded-node.md`, "Tearing down without leftovers"; the daemons'
//! order is the registry's, [`super::daemons::stop_order`]): kubelet first (it would restart
//! containers), then the host sysctls it set are put back ([`super::sysctl`]),
//! pod sandboxes through CRI, any container or shim still in the cluster's cgroups, kube-proxy
//! and containerd, the control plane and kine; then kubelet's mounts (deepest first; none at all
//! when a mount there is not the node's, [`foreign_mounts`]), the cgroups `up` recorded making
//! (deepest first), kubelet's log symlinks in /var/log/containers, and the network namespace and
//! veth when they are the recorded ones (inode, ifindex).
//!
//! Only what the record names is touched: processes by PID + start time (and nothing at all for
//! a record of another boot), shims by their exact `-address` ([`is_shim_of`]).

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::host::cgroup_mounts;
use super::netns;
use super::process::{Stopped, stop};
use super::record::{ClusterRecord, ProcRecord, proc_stat};

/// What `down` did and what failed.
#[derive(Debug, Default)]
pub struct Report {
    /// Human-readable lines, one per action taken.
    pub done: Vec<String>,
    /// Errors, one per failed action; `down` carried on after each.
    pub errors: Vec<String>,
}

impl Report {
    /// Records (and prints) an action taken.
    pub fn note(&mut self, s: impl Into<String>) {
        let s = s.into();
        crate::status_line!("   {s}");
        self.done.push(s);
    }
    /// Records (and prints) a failed action.
    pub fn fail(&mut self, e: anyhow::Error) {
        let s = format!("{e:#}");
        crate::status_line!("   error: {s}");
        self.errors.push(s);
    }
}

fn stop_one(report: &mut Report, rec: &ProcRecord, grace: Duration) {
    match stop(rec, grace) {
        Ok(Stopped::AlreadyGone) => {}
        Ok(Stopped::Terminated) => report.note(format!("stopped {} (pid {})", rec.name, rec.pid)),
        Ok(Stopped::Killed) => report.note(format!(
            "killed {} (pid {}) after {}s",
            rec.name,
            rec.pid,
            grace.as_secs()
        )),
        Err(e) => report.fail(e.context(format!("stopping {}", rec.name))),
    }
}

/// Whether `argv` is a containerd shim of the containerd listening on `socket`: its program is
/// `containerd-shim*` and it has the exact argument pair `-address <socket>` (containerd starts
/// every shim with `-namespace <ns> -id <id> -address <containerd socket>`; a substring match
/// would also take another cluster's whose state dir starts with this one's path).
pub fn is_shim_of(argv: &[String], socket: &Path) -> bool {
    let prog_ok = argv.first().is_some_and(|a0| {
        Path::new(a0)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("containerd-shim"))
    });
    let sock = socket.as_os_str().to_string_lossy();
    prog_ok
        && argv
            .windows(2)
            .any(|w| (w[0] == "-address" || w[0] == "--address") && w[1] == sock)
}

/// PIDs of processes that belong to the cluster although we did not start them directly:
/// containers (their cgroup path lies under the cluster's cgroup root) and containerd shims
/// ([`is_shim_of`] the cluster's containerd socket).
pub fn stray_pids(rec: &ClusterRecord) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let socket = rec.cri_socket();
    let cg = format!("{}/", rec.cgroup_root);
    let me = std::process::id() as i32;
    let Ok(procs) = procfs::process::all_processes() else {
        return out;
    };
    for p in procs.flatten() {
        if p.pid == me {
            continue;
        }
        let argv = p.cmdline().unwrap_or_default();
        let cmdline = argv.join(" ");
        let in_cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", p.pid))
            .map(|s| {
                s.lines().any(|l| {
                    l.split(':')
                        .nth(2)
                        .is_some_and(|path| path.starts_with(&cg))
                })
            })
            .unwrap_or(false);
        let shim = is_shim_of(&argv, &socket);
        if in_cgroup || shim {
            out.push((p.pid, cmdline));
        }
    }
    out
}

/// Kills (SIGKILL through a pidfd, start time re-checked) every process of the cluster we did not
/// start directly ([`stray_pids`]) until none is left, bounded by 5 s ([`lab::wait::Wait`]).
fn kill_strays(report: &mut Report, rec: &ClusterRecord) {
    let mut notes = Vec::new();
    let gone = lab::wait::Wait::new(
        "the cluster's leftover processes to end",
        Duration::from_secs(5),
        Duration::from_millis(100),
    )
    .blocking(
        || -> Result<lab::wait::Check<(), Vec<(i32, String)>>, std::convert::Infallible> {
            let strays = stray_pids(rec);
            if strays.is_empty() {
                return Ok(lab::wait::Check::Done(()));
            }
            let first = notes.is_empty();
            for (pid, cmd) in &strays {
                let Some((_, st)) = proc_stat(*pid) else {
                    continue;
                };
                let pr = ProcRecord {
                    name: "stray".into(),
                    pid: *pid,
                    start_time_ticks: st,
                    log: String::new(),
                    argv: vec![],
                };
                if first {
                    notes.push(format!(
                        "killing leftover process {pid}: {}",
                        cmd.chars().take(120).collect::<String>()
                    ));
                }
                let Some(p) = rustix::process::Pid::from_raw(*pid) else {
                    continue;
                };
                // The pidfd pins the process; the start-time check after opening it makes sure
                // it is still the one found above.
                if let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
                    && pr.alive()
                {
                    let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
                }
            }
            Ok(lab::wait::Check::NotYet(strays))
        },
        |_, _| {},
    );
    for n in notes {
        report.note(n);
    }
    if let Err(lab::wait::WaitError::TimedOut(t)) = gone {
        report.fail(anyhow::anyhow!(
            "processes of the cluster still running {} ms after SIGKILL: {:?}",
            t.waited.as_millis(),
            t.last
        ));
    }
}

/// What to do after one `crictl rmp -fa` ([`rmp_next`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RmpNext {
    /// Every pod sandbox was removed; `n` lines of removed sandboxes.
    Done(usize),
    /// containerd refused for a passing state (a container still starting, running or being
    /// removed): stop the pods and containers, then `rmp` again.
    StopThenRetry(String),
    /// Retrying cannot help (containerd unreachable, an unknown error): go on with the
    /// process-level teardown, which ends the cluster's shims and removes their sockets.
    GiveUp(String),
}

/// containerd's CRI refusals that pass once the container's state moves on
/// (`internal/cri/server/container_remove.go` `setContainerRemoving`: "container is in starting
/// state, can't be removed", "container is still running, to stop first", "container is already in
/// removing state"; `sandbox_remove.go`: "failed to forcibly stop sandbox").
const RMP_PASSING: &[&str] = &[
    "in starting state",
    "can't be removed",
    "still running",
    "already in removing state",
    "failed to forcibly stop sandbox",
    "DeadlineExceeded",
    "context deadline exceeded",
];

/// How many pod sandboxes one `crictl rmp` output says it removed: its `Removed sandbox <id>`
/// lines (crictl `cmd/crictl/sandbox.go`), not its `Stopped sandbox` lines nor its warnings
/// (e.g. a missing `/etc/crictl.yaml`).
pub fn removed_sandboxes(output: &str) -> usize {
    output
        .lines()
        .filter(|l| l.trim_start().starts_with("Removed sandbox "))
        .count()
}

/// Decides from one `crictl rmp -fa` run (its exit status and its stdout + stderr) whether the
/// sandboxes are gone, worth stopping and removing again, or not (pure: the retry decision).
pub fn rmp_next(success: bool, output: &str) -> RmpNext {
    let text = output.trim();
    if success {
        return RmpNext::Done(removed_sandboxes(text));
    }
    let line = text
        .lines()
        .find(|l| RMP_PASSING.iter().any(|p| l.contains(p)))
        .map(str::trim);
    match line {
        Some(l) => RmpNext::StopThenRetry(l.to_owned()),
        None => RmpNext::GiveUp(if text.is_empty() {
            "crictl failed without output".to_owned()
        } else {
            text.to_owned()
        }),
    }
}

/// How many `crictl rmp -fa` runs teardown makes at most (each after stopping pods and
/// containers), and the pause between them; with crictl's own 30 s `--timeout` per call the step
/// is bounded.
pub const RMP_TRIES: usize = 4;
/// Pause before another `crictl rmp -fa`.
pub const RMP_PAUSE: Duration = Duration::from_secs(2);

/// Runs `crictl --runtime-endpoint … ARGS` on the cluster's containerd; exit success and
/// stdout + stderr.
fn crictl(rec: &ClusterRecord, args: &[&str]) -> Result<(bool, String)> {
    let crictl = rec.bin_dir.join("crictl");
    let endpoint = format!("unix://{}", rec.cri_socket().display());
    // Its own process group: a second Ctrl-C at the terminal during teardown reaches the
    // foreground group only, so it cannot kill crictl half-way (issue 12).
    let mut cmd = Command::new(&crictl);
    cmd.process_group(0)
        .args([
            "--runtime-endpoint",
            &endpoint,
            "--image-endpoint",
            &endpoint,
            "--timeout",
            "30s",
        ])
        .args(args);
    // Unchecked: a refusal's wording decides what happens next (`rmp_next`).
    let o = crate::command::run_unchecked(cmd)?;
    Ok((o.status.success(), o.text()))
}

/// Stops every pod sandbox and container through CRI (`crictl stop --timeout 0`, `crictl stopp`),
/// best effort: what fails here is retried by the next `rmp` or ended by the process-level
/// teardown.
fn crictl_stop_all(rec: &ClusterRecord) -> String {
    let ids = |args: &[&str]| -> Vec<String> {
        crictl(rec, args)
            .ok()
            .filter(|(ok, _)| *ok)
            .map(|(_, out)| {
                out.split_whitespace()
                    .filter(|w| w.chars().all(|c| c.is_ascii_hexdigit()))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = ids(&["ps", "-aq"]);
    let pods = ids(&["pods", "-q"]);
    let mut said = Vec::new();
    if !containers.is_empty() {
        let mut args = vec!["stop", "--timeout", "0"];
        args.extend(containers.iter().map(String::as_str));
        let r = crictl(rec, &args).map(|(ok, _)| ok).unwrap_or(false);
        said.push(format!(
            "stop {} containers: {}",
            containers.len(),
            ok_word(r)
        ));
    }
    if !pods.is_empty() {
        let mut args = vec!["stopp"];
        args.extend(pods.iter().map(String::as_str));
        let r = crictl(rec, &args).map(|(ok, _)| ok).unwrap_or(false);
        said.push(format!("stopp {} pods: {}", pods.len(), ok_word(r)));
    }
    said.join(", ")
}

fn ok_word(ok: bool) -> &'static str {
    if ok { "ok" } else { "failed" }
}

/// Removes every pod sandbox through CRI (`crictl rmp -fa`). A refusal for a passing state (e.g.
/// "container is in starting state, can't be removed") stops the pods and containers and tries
/// again, at most [`RMP_TRIES`] times; when it still refuses (or containerd cannot be reached) this
/// is a note, not an error: the process-level teardown that follows ends the cluster's shims
/// (by pidfd, [`kill_strays`]) and removes their sockets ([`remove_shim_sockets`]), and reports an
/// error itself if anything is left.
fn crictl_remove_pods(report: &mut Report, rec: &ClusterRecord) {
    for attempt in 1..=RMP_TRIES {
        let (ok, out) = match crictl(rec, &["rmp", "-fa"]) {
            Ok(x) => x,
            Err(e) => {
                report.fail(e);
                return;
            }
        };
        match rmp_next(ok, &out) {
            RmpNext::Done(n) => {
                report.note(format!(
                    "removed {n} pod sandboxes through CRI (crictl rmp -fa{})",
                    if attempt > 1 {
                        format!(", try {attempt}")
                    } else {
                        String::new()
                    }
                ));
                return;
            }
            RmpNext::StopThenRetry(why) if attempt < RMP_TRIES => {
                let stopped = crictl_stop_all(rec);
                report.note(format!(
                    "crictl rmp -fa refused ({why}); stopped through CRI ({stopped}), trying again in {} s",
                    RMP_PAUSE.as_secs()
                ));
                std::thread::sleep(RMP_PAUSE);
            }
            RmpNext::StopThenRetry(why) | RmpNext::GiveUp(why) => {
                report.note(format!(
                    "crictl rmp -fa did not remove every pod sandbox (try {attempt}: {why}); the shims are ended by the process-level teardown below"
                ));
                return;
            }
        }
    }
}

/// The socket containerd gives the shim of task `id` in namespace `ns` when it listens on
/// `containerd_socket`: `/run/containerd/s/<hex sha256 of "<containerd_socket>/<ns>/<id>">`
/// (containerd v2 `pkg/shim.SocketAddress`, socket root `defaults.DefaultStateDir`
/// `/run/containerd`; the same path plus `/debug` for a debug shim). Checked against a live
/// shim's socket on this machine (2026-12-01).
pub fn shim_socket_for(containerd_socket: &Path, ns: &str, id: &str, debug: bool) -> PathBuf {
    use sha2::Digest as _;
    let mut p = containerd_socket.join(ns).join(id);
    if debug {
        p = p.join("debug");
    }
    let d = sha2::Sha256::digest(p.as_os_str().as_encoded_bytes());
    Path::new("/run/containerd/s").join(hex::encode(d))
}

/// `(namespace, id)` of a shim's command line (`-namespace NS -id ID`).
pub fn shim_task(argv: &[String]) -> Option<(String, String)> {
    let arg = |name: &str| {
        argv.windows(2)
            .find(|w| w[0] == format!("-{name}") || w[0] == format!("--{name}"))
            .map(|w| w[1].clone())
    };
    Some((arg("namespace")?, arg("id")?))
}

/// `(namespace, id)` of the cluster's live shims ([`is_shim_of`] its containerd socket).
fn live_shim_tasks(rec: &ClusterRecord) -> Vec<(String, String)> {
    let socket = rec.cri_socket();
    let Ok(procs) = procfs::process::all_processes() else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.cmdline().ok())
        .filter(|argv| is_shim_of(argv, &socket))
        .filter_map(|argv| shim_task(&argv))
        .collect()
}

/// Shim socket paths of the cluster's tasks: containerd keeps them outside our state dir, at
/// `/run/containerd/s/<sha256>` (`pkg/shim.SocketAddress`, derived from the default state dir),
/// and writes each into the task bundle's `bootstrap.json` under our state dir.
pub fn shim_sockets(state_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = state_dir.join("containerd/state/io.containerd.runtime.v2.task");
    let Ok(namespaces) = std::fs::read_dir(&root) else {
        return out;
    };
    for ns in namespaces.flatten() {
        let Ok(tasks) = std::fs::read_dir(ns.path()) else {
            continue;
        };
        for t in tasks.flatten() {
            // containerd 2.x writes `bootstrap.json` ({"address": "unix://…", …}); 1.x wrote `address`.
            let from_json = std::fs::read_to_string(t.path().join("bootstrap.json"))
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v["address"].as_str().map(str::to_string));
            let addr = from_json.or_else(|| std::fs::read_to_string(t.path().join("address")).ok());
            if let Some(p) = addr
                .as_deref()
                .and_then(|a| a.trim().strip_prefix("unix://"))
            {
                out.push(PathBuf::from(p));
            }
        }
    }
    out
}

/// `(namespace, id)` of every task directory containerd keeps under the state dir
/// (`containerd/state/io.containerd.runtime.v2.task/<ns>/<id>`).
pub fn task_dirs(state_dir: &Path) -> Vec<(String, String)> {
    let root = state_dir.join("containerd/state/io.containerd.runtime.v2.task");
    let mut out = Vec::new();
    for ns in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for t in std::fs::read_dir(ns.path()).into_iter().flatten().flatten() {
            out.push((
                ns.file_name().to_string_lossy().into_owned(),
                t.file_name().to_string_lossy().into_owned(),
            ));
        }
    }
    out
}

/// Removes the shim sockets of the cluster's tasks that remain after their shims were killed:
/// the addresses the task bundles name ([`shim_sockets`]) and the ones containerd derives from
/// our containerd socket for each task seen (`tasks`: live shims' `-namespace`/`-id` taken before
/// they were ended, and the task directories; [`shim_socket_for`]) — a shim whose sandbox never
/// finished starting has a socket but maybe no `bootstrap.json` yet.
fn remove_shim_sockets(report: &mut Report, rec: &ClusterRecord, tasks: &[(String, String)]) {
    let socket = rec.cri_socket();
    let mut socks = shim_sockets(&rec.state_dir);
    for (ns, id) in tasks.iter().chain(task_dirs(&rec.state_dir).iter()) {
        for debug in [false, true] {
            socks.push(shim_socket_for(&socket, ns, id, debug));
        }
    }
    socks.sort();
    socks.dedup();
    for sock in socks {
        if sock.starts_with("/run/containerd/s") && sock.exists() {
            match std::fs::remove_file(&sock) {
                Ok(()) => report.note(format!("removed shim socket {}", sock.display())),
                Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", sock.display())),
            }
        }
    }
}

/// One line of `/proc/self/mountinfo` (proc(5)): the fields teardown needs, with the octal
/// escapes (`\040` for a space, …) decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor` of the filesystem.
    pub majmin: String,
    /// The directory of the filesystem that forms this mount's root (not `/` for a bind mount of
    /// a subtree).
    pub root: PathBuf,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type (`ext4`, `tmpfs`, `overlay`, …).
    pub fs_type: String,
}

fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Parses mountinfo text (proc(5) format).
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            Some(Mount {
                majmin: f.get(2)?.to_string(),
                root: unescape(f.get(3)?),
                mount_point: unescape(f.get(4)?),
                fs_type: right.split(' ').next()?.to_string(),
            })
        })
        .collect()
}

/// The mounts of this process's mount namespace.
pub fn mounts() -> Vec<Mount> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// Mount points under `dir`, deepest first.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = mounts()
        .into_iter()
        .map(|m| m.mount_point)
        .filter(|mp| mp.starts_with(dir))
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    out.dedup();
    out
}

/// Filesystems the node's programs create fresh (their root `/`): kubelet's volume tmpfs,
/// containerd's overlay root filesystems and sandbox `/dev/shm`, pinned namespaces.
pub const NODE_FS_TYPES: &[&str] = &[
    "tmpfs", "overlay", "nsfs", "proc", "mqueue", "devpts", "sysfs",
];

/// Mounts under `state_dir` that the node did not make: neither a fresh filesystem of a
/// [`NODE_FS_TYPES`] type nor a bind mount of a directory inside `state_dir` itself (kubelet binds
/// its root dir onto itself and volume subpaths from its pod dirs). A bind mount of a host
/// directory left there is one; `down` then unmounts and removes nothing under the state dir.
pub fn foreign_mounts(all: &[Mount], state_dir: &Path) -> Vec<Mount> {
    // Where the state dir lies on its own filesystem: the deepest mount containing it.
    let home = all
        .iter()
        .filter(|m| state_dir.starts_with(&m.mount_point) && m.mount_point != state_dir)
        .max_by_key(|m| m.mount_point.components().count());
    let inside = home.and_then(|h| {
        let rel = state_dir.strip_prefix(&h.mount_point).ok()?;
        Some((h.majmin.clone(), h.root.join(rel)))
    });
    all.iter()
        .filter(|m| m.mount_point.starts_with(state_dir) && m.mount_point != state_dir)
        .filter(|m| {
            let fresh = NODE_FS_TYPES.contains(&m.fs_type.as_str())
                && (m.root == Path::new("/") || m.fs_type == "nsfs");
            let own_bind = inside
                .as_ref()
                .is_some_and(|(mm, dir)| *mm == m.majmin && m.root.starts_with(dir));
            !(fresh || own_bind)
        })
        .cloned()
        .collect()
}

fn unmount_all(report: &mut Report, dir: &Path) {
    // A mount may be stacked several times; repeat until none is left.
    for _ in 0..20 {
        let mounts = mounts_under(dir);
        if mounts.is_empty() {
            return;
        }
        for m in mounts {
            match nix::mount::umount2(&m, nix::mount::MntFlags::empty()) {
                Ok(()) => report.note(format!("unmounted {}", m.display())),
                Err(_) => match nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH) {
                    Ok(()) => report.note(format!("detached {}", m.display())),
                    Err(e) => report.fail(anyhow::anyhow!("unmounting {}: {e}", m.display())),
                },
            }
        }
    }
    let left = mounts_under(dir);
    if !left.is_empty() {
        report.fail(anyhow::anyhow!(
            "still mounted under {} after 20 rounds of unmounting; nothing under it is removed:\n{}",
            dir.display(),
            left.iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
}

/// Removes everything under `dir` except the top-level entries named in `keep`, never crossing a
/// mount point: it refuses (removing nothing) while `/proc/self/mountinfo` lists a mount under
/// `dir`, and walks only entries on `dir`'s own filesystem (walkdir `same_file_system`, like
/// `rm -rf --one-file-system`), so host files behind a bind mount are never reached.
///
/// # Errors
/// The mounts found, or every entry that could not be removed (the rest is removed).
pub fn remove_contents(dir: &Path, keep: &[&str]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mounts = mounts_under(dir);
    if !mounts.is_empty() {
        anyhow::bail!(
            "refusing to remove {}: still mounted under it (unmount these first):\n{}",
            dir.display(),
            mounts
                .iter()
                .map(|m| m.display().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    let dev = match std::fs::symlink_metadata(dir) {
        Ok(m) => m.dev(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut failed = Vec::new();
    let top = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for top in top {
        let top = match top {
            Ok(e) => e,
            Err(e) => {
                failed.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        if keep
            .iter()
            .any(|k| top.file_name() == std::ffi::OsStr::new(k))
        {
            continue;
        }
        // Not a real directory (a file, a socket, a symlink to anywhere): remove the entry
        // itself. WalkDir always follows a symlink given as its root, so never give it one.
        let is_dir = top.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if !is_dir {
            if let Err(e) = std::fs::remove_file(top.path()) {
                failed.push(format!("{}: {e}", top.path().display()));
            }
            continue;
        }
        // Each top-level entry (itself last): contents first, one filesystem, no symlinks followed.
        for entry in walkdir::WalkDir::new(top.path())
            .same_file_system(true)
            .follow_links(false)
            .contents_first(true)
        {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    failed.push(format!("{e}"));
                    continue;
                }
            };
            let p = entry.path();
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) => {
                    failed.push(format!("{}: {e}", p.display()));
                    continue;
                }
            };
            if meta.dev() != dev {
                failed.push(format!(
                    "{}: on another filesystem, left alone",
                    p.display()
                ));
                continue;
            }
            let r = if entry.file_type().is_dir() {
                std::fs::remove_dir(p)
            } else {
                std::fs::remove_file(p)
            };
            if let Err(e) = r {
                failed.push(format!("{}: {e}", p.display()));
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "could not remove {} entries under {}:\n{}",
            failed.len(),
            dir.display(),
            failed.join("\n")
        );
    }
    Ok(())
}

/// Cgroup directories of the cluster in every hierarchy (v1 controllers and unified), existing ones.
pub fn cgroup_dirs(cgroup_root: &str) -> Vec<PathBuf> {
    let rel = cgroup_root.trim_start_matches('/');
    let mut v: Vec<PathBuf> = cgroup_mounts()
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.join(rel))
        .filter(|d| d.is_dir())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn remove_cgroup_tree(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in entries.flatten() {
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            n += remove_cgroup_tree(&e.path())?;
        }
    }
    // A cgroup may stay busy for a moment after its last task exited.
    let w = lab::wait::Wait::new(
        format!("cgroup {} to be removable", dir.display()),
        Duration::from_secs(5),
        Duration::from_millis(100),
    );
    w.blocking(
        || -> Result<lab::wait::Check<usize, String>, std::convert::Infallible> {
            Ok(match std::fs::remove_dir(dir) {
                Ok(()) => lab::wait::Check::Done(n + 1),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => lab::wait::Check::Done(n),
                Err(e) => lab::wait::Check::NotYet(format!("rmdir: {e}")),
            })
        },
        |_, _| {},
    )
    .map_err(|e| match e {
        lab::wait::WaitError::TimedOut(t) => anyhow::Error::from(lab::error::LabError::from(t))
            .context(format!("removing cgroup {}", dir.display())),
        lab::wait::WaitError::Failed(never) => match never {},
    })
}

/// Removes the cgroup trees `up` recorded making ([`ClusterRecord::cgroups_created`]).
fn remove_cgroups(report: &mut Report, rec: &ClusterRecord) {
    for dir in rec.cgroups_created.iter().filter(|d| d.is_dir()) {
        match remove_cgroup_tree(dir) {
            Ok(n) => report.note(format!("removed {n} cgroups under {}", dir.display())),
            Err(e) => report.fail(e),
        }
    }
}

/// On cgroup v2: stops the delegated unit `up` started ([`super::host::stop_delegate_unit`]),
/// then puts the parents' `cgroup.subtree_control` back where that is safe
/// ([`super::host::put_back_parents`]; what stays and why: docs/cgroup.md).
fn cgroup_host_changes(report: &mut Report, rec: &ClusterRecord) {
    let Some(changes) = &rec.cgroup_changes else {
        return;
    };
    match super::host::stop_delegate_unit(changes) {
        Ok(Some(done)) => report.note(done),
        Ok(None) => {}
        Err(e) => report.fail(e),
    }
    for line in super::host::put_back_parents(changes) {
        report.note(line);
    }
}

/// kubelet's symlinks in `/var/log/containers` that point into `state_dir` (kubelet hard-codes that
/// directory; `podLogsDir` only moves the targets).
pub fn container_log_links(state_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/var/log/containers") else {
        return vec![];
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read_link(p)
                .map(|t| t.starts_with(state_dir))
                .unwrap_or(false)
        })
        .collect()
}

/// Whether another cluster under the same state root has a live kubelet.
fn other_kubelet_alive(rec: &ClusterRecord) -> bool {
    let Some(root) = rec.state_dir.parent() else {
        return false;
    };
    let Ok(rd) = std::fs::read_dir(root) else {
        return false;
    };
    rd.flatten()
        .filter(|e| e.path() != rec.state_dir)
        .filter_map(|e| ClusterRecord::load(&e.path()).ok().flatten())
        .any(|r| {
            r.processes
                .iter()
                .any(|p| p.name == super::daemons::kubelet::DAEMON.name && p.alive())
        })
}

/// Removes the fixed host paths `up` saw created ([`super::record::HOST_PATHS`]): kubelet's
/// device-plugin socket (only when no other cluster's kubelet runs), then each directory if empty.
fn remove_host_paths(report: &mut Report, rec: &ClusterRecord) {
    if rec.host_paths_created.is_empty() || other_kubelet_alive(rec) {
        return;
    }
    let sock = Path::new("/var/lib/kubelet/device-plugins/kubelet.sock");
    if rec
        .host_paths_created
        .iter()
        .any(|p| p == Path::new("/var/lib/kubelet/device-plugins"))
        && sock.exists()
    {
        match std::fs::remove_file(sock) {
            Ok(()) => report.note(format!("removed {}", sock.display())),
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", sock.display())),
        }
    }
    let run_netns = Path::new(super::record::RUN_NETNS);
    for p in rec.host_paths_created.iter().filter(|p| *p != run_netns) {
        match std::fs::remove_dir(p) {
            Ok(()) => report.note(format!("removed {}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                let left: Vec<String> = std::fs::read_dir(p)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                report.fail(anyhow::anyhow!(
                    "{} is not empty after teardown: {}",
                    p.display(),
                    left.join(", ")
                ));
            }
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", p.display())),
        }
    }
}

/// Puts back the host sysctls kubelet set ([`super::sysctl::restore`]).
fn restore_sysctls(report: &mut Report, rec: &ClusterRecord) {
    for r in super::sysctl::restore(&rec.host_sysctls) {
        match r {
            Ok(super::sysctl::Restored::PutBack { key, from, to }) => report.note(format!(
                "host sysctl {key}: put back {to} (kubelet had set {from})"
            )),
            Ok(super::sysctl::Restored::LeftAlone { key, now }) => report.note(format!(
                "host sysctl {key} is {now}, neither the recorded value nor kubelet's: left alone"
            )),
            Ok(super::sysctl::Restored::Unchanged) => {}
            Err(e) => report.fail(e.context("restoring a host sysctl")),
        }
    }
}

/// Tears the cluster down; see the module doc for the order. Never stops at the first error.
///
/// A record from another boot ([`ClusterRecord::same_boot`]) owns nothing any more: its
/// processes, namespace, cgroups, mounts and sysctl values ended with that boot, and its PIDs may
/// now be anyone's, so nothing is signalled or deleted (the caller may still clear the state dir).
pub fn down(rec: &ClusterRecord) -> Report {
    let mut report = Report::default();
    if !rec.same_boot() {
        report.note(format!(
            "the record of cluster {} is from another boot ({}): nothing of it can still run; no process signalled, nothing outside the state dir touched",
            rec.name, rec.boot_id
        ));
        return report;
    }
    let grace = Duration::from_secs(15);
    fn by_name<'a>(
        rec: &'a ClusterRecord,
        n: &'a str,
    ) -> impl Iterator<Item = &'a ProcRecord> + 'a {
        rec.processes.iter().filter(move |p| p.name == n)
    }
    // The registry's stop order (`daemons::Daemon::stop_order`): kubelet before the pods go.
    let order = super::daemons::stop_order();
    let (first, rest) = order.split_at(
        order
            .iter()
            .position(|d| d.stop_order >= super::daemons::STOP_BEFORE_PODS)
            .unwrap_or(order.len()),
    );
    for d in first {
        for p in by_name(rec, d.name) {
            stop_one(&mut report, p, grace);
        }
    }
    restore_sysctls(&mut report, rec);
    // The shims' tasks, read before anything ends them (their sockets are derived from these).
    let mut tasks = live_shim_tasks(rec);
    if by_name(rec, super::daemons::containerd::DAEMON.name).any(|p| p.alive()) {
        crictl_remove_pods(&mut report, rec);
    }
    tasks.extend(live_shim_tasks(rec));
    kill_strays(&mut report, rec);
    for d in rest {
        for p in by_name(rec, d.name) {
            stop_one(&mut report, p, grace);
        }
    }
    // Anything recorded under another name (a record written by another version), last.
    for p in rec
        .processes
        .iter()
        .filter(|p| super::daemons::by_name(&p.name).is_none())
    {
        stop_one(&mut report, p, grace);
    }
    kill_strays(&mut report, rec);
    remove_shim_sockets(&mut report, rec, &tasks);
    let foreign = foreign_mounts(&mounts(), &rec.state_dir);
    if foreign.is_empty() {
        unmount_all(&mut report, &rec.state_dir);
    } else {
        report.fail(anyhow::anyhow!(
            "mounted under the state dir {} but not by the cluster (bind mounts of host directories?): {}; nothing under the state dir was unmounted or removed: unmount these yourself, then run `cargo xtask cluster down --name {}` again",
            rec.state_dir.display(),
            foreign
                .iter()
                .map(|m| format!("{} ({} {} of {})", m.mount_point.display(), m.fs_type, m.majmin, m.root.display()))
                .collect::<Vec<_>>()
                .join(", "),
            rec.name
        ));
    }
    remove_cgroups(&mut report, rec);
    cgroup_host_changes(&mut report, rec);
    for link in container_log_links(&rec.state_dir) {
        match std::fs::remove_file(&link) {
            Ok(()) => report.note(format!("removed {}", link.display())),
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", link.display())),
        }
    }
    remove_cni_results(&mut report, rec);
    remove_host_paths(&mut report, rec);
    match netns::delete(
        &rec.netns,
        rec.netns_inode,
        &rec.net.host_veth(),
        rec.host_veth_ifindex,
    ) {
        Ok(done) => done
            .into_iter()
            .for_each(|d| report.note(format!("deleted {d}"))),
        Err(e) => report.fail(e),
    }
    remove_run_netns(&mut report, rec);
    report
}

/// Removes libcni's cached results of this cluster's pods from `/var/lib/cni/results` (a pod
/// torn down through CRI has its entries removed by CNI DEL; a cluster that died leaves them).
/// An entry is this cluster's only when it is a `cniCacheV1` record of the cluster's network
/// (`kca-<name>`) or of containerd's loopback (`cni-loopback`), its file name is
/// `<networkName>-<containerId>-<ifName>` and its `netns` lies under the cluster's state dir;
/// anything else is left alone.
fn remove_cni_results(report: &mut Report, rec: &ClusterRecord) {
    let Ok(rd) = std::fs::read_dir("/var/lib/cni/results") else {
        return;
    };
    let mut removed = 0;
    for path in rd.flatten().map(|e| e.path()) {
        let Some(v) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        else {
            continue;
        };
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if cni_result_is_ours(&name, &v, rec) {
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", path.display())),
            }
        }
    }
    if removed > 0 {
        report.note(format!(
            "removed {removed} CNI result(s) of the cluster's pods from /var/lib/cni/results"
        ));
    }
}

/// Whether the libcni cache entry `v` in file `name` is one of `rec`'s pods' (see
/// [`remove_cni_results`]).
fn cni_result_is_ours(name: &str, v: &serde_json::Value, rec: &ClusterRecord) -> bool {
    let text = |k: &str| v[k].as_str().unwrap_or_default();
    let (net, id, ifname) = (text("networkName"), text("containerId"), text("ifName"));
    v["kind"] == "cniCacheV1"
        && (net == format!("kca-{}", rec.name) || net == "cni-loopback")
        && !id.is_empty()
        && name == format!("{net}-{id}-{ifname}")
        && Path::new(text("netns")).starts_with(&rec.state_dir)
}

/// `/run/netns` when `up` saw it created: put back ([`put_back_run_netns`]) once no
/// namespace is left in it; while another namespace is there (another cluster's, anyone's), left.
pub(crate) fn remove_run_netns(report: &mut Report, rec: &ClusterRecord) {
    let dir = Path::new(super::record::RUN_NETNS);
    if !rec.host_paths_created.iter().any(|p| p == dir) {
        return;
    }
    match put_back_run_netns() {
        Ok(done) => done.into_iter().for_each(|d| report.note(d)),
        Err(e) => report.fail(e),
    }
}

/// Puts `/run/netns` back as it was before `ip netns add` first made it (the directory, bind-mounted
/// onto itself): when it holds no namespace, unmounted (if it is a mount point) and removed. The
/// caller must know it was absent before (a cluster record's `host_paths_created`, or a test that
/// looked). Returns what was done, e.g. `["unmounted /run/netns", "removed /run/netns"]`, or
/// `["/run/netns holds other namespaces: left"]`; nothing when it is already gone.
///
/// Errors: the unmount or the removal failed (nothing else is tried after a failed unmount).
pub fn put_back_run_netns() -> Result<Vec<String>> {
    let dir = Path::new(super::record::RUN_NETNS);
    match std::fs::read_dir(dir).map(|mut rd| rd.next().is_none()) {
        Ok(true) => {}
        Ok(false) => {
            return Ok(vec![format!(
                "{} holds other namespaces: left",
                dir.display()
            )]);
        }
        Err(_) => return Ok(vec![]),
    }
    let mut done = vec![];
    if mounts().iter().any(|m| m.mount_point == dir) {
        nix::mount::umount2(dir, nix::mount::MntFlags::empty())
            .with_context(|| format!("unmounting {}", dir.display()))?;
        done.push(format!("unmounted {}", dir.display()));
    }
    std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
    done.push(format!("removed {}", dir.display()));
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_clusters_own_cni_results_are_its() {
        let rec: ClusterRecord = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "name": "crash", "state_dir": "/work/t/lab/crash",
            "netns": "kca-crash", "node_name": "kca-crash",
            "net": {"index": 1}, "cgroup_root": "/kca-crash", "bin_dir": "/b", "cni_bin_dir": "/c",
            "processes": [], "created_at": "", "timings_ms": {}
        }))
        .unwrap();
        let entry = |net: &str, netns: &str| {
            serde_json::json!({"kind": "cniCacheV1", "containerId": "e1d1", "ifName": "eth0",
                "networkName": net, "netns": netns})
        };
        let ns = "/work/t/lab/crash/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1";
        let other = "/work/t/lab/crash-2/containerd/state/netns/cni-1";
        // Ours: its network or the loopback, named <net>-<id>-<if>, netns under its state dir;
        // another network, another state dir or another file name: not ours.
        for (ours, name, net, netns) in [
            (true, "kca-crash-e1d1-eth0", "kca-crash", ns),
            (true, "cni-loopback-e1d1-eth0", "cni-loopback", ns),
            (false, "kca-laba-e1d1-eth0", "kca-laba", ns),
            (false, "kca-crash-e1d1-eth0", "kca-crash", other),
            (false, "kca-crash-e1d2-eth0", "kca-crash", ns),
        ] {
            let found = cni_result_is_ours(name, &entry(net, netns), &rec);
            assert_eq!(found, ours, "{name} (network {net}, netns {netns})");
        }
    }

    const INFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 254:1 /work/t/lab/kca/kubelet /work/t/lab/kca/kubelet rw shared:2 - ext4 /dev/vda1 rw
31 30 0:50 / /work/t/lab/kca/kubelet/pods/u/volumes/kubernetes.io~projected/x rw - tmpfs tmpfs rw
32 22 0:51 / /work/t/lab/kca/containerd/state/r/rootfs rw - overlay overlay rw
33 22 254:1 /srv/victim /work/t/lab/kca/kubelet/stack rw - ext4 /dev/vda1 rw
34 22 0:30 /scratch /work/t/lab/kca/my\\040dir rw - tmpfs tmpfs rw
35 22 254:1 /work/t/lab/kca-2/kubelet /work/t/lab/kca-2/kubelet rw - ext4 /dev/vda1 rw
";

    #[test]
    fn mountinfo_escapes_are_decoded() {
        let m = parse_mountinfo(INFO);
        assert_eq!(m.len(), 7);
        assert_eq!(m[5].mount_point, PathBuf::from("/work/t/lab/kca/my dir"));
        assert_eq!(m[5].root, PathBuf::from("/scratch"));
    }

    #[test]
    fn only_binds_of_host_dirs_are_foreign() {
        let m = parse_mountinfo(INFO);
        let f: Vec<PathBuf> = foreign_mounts(&m, Path::new("/work/t/lab/kca"))
            .into_iter()
            .map(|m| m.mount_point)
            .collect();
        assert_eq!(
            f,
            vec![
                PathBuf::from("/work/t/lab/kca/kubelet/stack"),
                PathBuf::from("/work/t/lab/kca/my dir"),
            ]
        );
        // A bind of the sibling cluster's own dir is not under this state dir at all.
        assert!(foreign_mounts(&m, Path::new("/work/t/lab/kca-2")).is_empty());
    }

    #[test]
    fn remove_contents_keeps_only_what_it_is_told() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        for f in [
            "logs/a.log",
            "logs/b.log",
            "kine/state.db",
            "cni/net.d/10.conflist",
            "x/y/z/f",
            "top",
        ] {
            let p = dir.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x").unwrap();
        }
        std::fs::write(dir.join("kca-state-dir.json"), "{}").unwrap();
        // Symlinks to a directory outside, at the top and deeper: only the links go.
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("sub")).unwrap();
        std::fs::write(outside.path().join("sub/host-file"), "host").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.join("x/y/deeplink")).unwrap();
        remove_contents(dir, &["logs", "kca-state-dir.json"]).unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("sub/host-file")).unwrap(),
            "host"
        );
        let mut left: Vec<String> = walkdir::WalkDir::new(dir)
            .min_depth(1)
            .into_iter()
            .map(|e| {
                e.unwrap()
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["kca-state-dir.json", "logs", "logs/a.log", "logs/b.log"]
        );
    }

    #[test]
    fn rmp_is_retried_only_for_a_passing_refusal() {
        // crictl's lines on success: one per removed sandbox.
        assert_eq!(
            rmp_next(true, "Stopped sandbox 9d56df\nRemoved sandbox 9d56df\n"),
            RmpNext::Done(1)
        );
        // crictl's warnings (no /etc/crictl.yaml) on a containerd without pods are no sandbox.
        assert_eq!(
            rmp_next(
                true,
                "time=\"2026-12-01T14:05:01Z\" level=warning msg=\"Config \\\"/etc/crictl.yaml\\\" does not exist, trying next: \\\"/usr/bin/crictl.yaml\\\"\"\ntime=\"2026-12-01T14:05:01Z\" level=warning msg=\"runtime connect using default endpoints\"\n"
            ),
            RmpNext::Done(0)
        );
        assert_eq!(rmp_next(true, ""), RmpNext::Done(0));
        // The refusal seen on 2026-11-30 (containerd's setContainerRemoving).
        let starting = "Stopped sandbox 220a6f\ntime=\"2026-11-30T22:20:01Z\" level=fatal msg=\"removing the pod sandbox \\\"220a6f\\\": rpc error: code = Unknown desc = failed to remove container \\\"91deca\\\": container is in starting state, can't be removed\"\n";
        match rmp_next(false, starting) {
            RmpNext::StopThenRetry(line) => {
                assert!(line.contains("in starting state"), "{line}");
                assert!(!line.contains("Stopped sandbox"), "{line}");
            }
            other => panic!("{other:?}"),
        }
        for passing in [
            "desc = container is still running, to stop first",
            "desc = container is already in removing state",
            "desc = failed to forcibly stop sandbox \"x\": context deadline exceeded",
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded",
        ] {
            assert!(
                matches!(rmp_next(false, passing), RmpNext::StopThenRetry(_)),
                "{passing}"
            );
        }
        // Retrying cannot help: containerd is gone, or an error we do not know.
        for hopeless in [
            "validate service connection: validate CRI v1 runtime API for endpoint \"unix:///x/containerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /x/containerd.sock: connect: no such file or directory\"",
            "rpc error: code = Unknown desc = something else",
        ] {
            assert!(
                matches!(rmp_next(false, hopeless), RmpNext::GiveUp(t) if t == hopeless),
                "{hopeless}"
            );
        }
        assert_eq!(
            rmp_next(false, "  "),
            RmpNext::GiveUp("crictl failed without output".into())
        );
    }

    #[test]
    fn shim_sockets_are_derived_like_containerd() {
        // A live shim on this machine (2026-12-01): `-namespace k8s.io -id 9d56df… -address
        // /work/wt-xtk/target/lab/xtk/containerd/containerd.sock` listened on this socket.
        let sock = Path::new("/work/wt-xtk/target/lab/xtk/containerd/containerd.sock");
        assert_eq!(
            shim_socket_for(
                sock,
                "k8s.io",
                "9d56df645a779b71e8ff1c6eb947ddc27538cc324af57d9213961abb44ee1210",
                false
            ),
            Path::new(
                "/run/containerd/s/df02d5320b164c4c7320f4dd885df52c34591e8095a08bfb0aef22a26e60d8b0"
            )
        );
        assert_ne!(
            shim_socket_for(sock, "k8s.io", "9d56df", true),
            shim_socket_for(sock, "k8s.io", "9d56df", false)
        );
        let argv: Vec<String> = [
            "/b/containerd-shim-runc-v2",
            "-namespace",
            "k8s.io",
            "-id",
            "abc",
            "-address",
            "/r/lab/containerd/containerd.sock",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(shim_task(&argv), Some(("k8s.io".into(), "abc".into())));
        assert_eq!(shim_task(&argv[..3]), None);
    }

    #[test]
    fn shims_match_by_exact_address() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let sock = Path::new("/r/lab/containerd/containerd.sock");
        let mine = argv(&[
            "/b/containerd-shim-runc-v2",
            "-namespace",
            "k8s.io",
            "-id",
            "abc",
            "-address",
            "/r/lab/containerd/containerd.sock",
        ]);
        assert!(is_shim_of(&mine, sock));
        let other = argv(&[
            "/b/containerd-shim-runc-v2",
            "-address",
            "/r/lab-2/containerd/containerd.sock",
        ]);
        assert!(!is_shim_of(&other, sock));
        let decoy = argv(&[
            "grep",
            "-r",
            "containerd-shim",
            "-address",
            "/r/lab/containerd/containerd.sock",
        ]);
        assert!(!is_shim_of(&decoy, sock));
    }
}
